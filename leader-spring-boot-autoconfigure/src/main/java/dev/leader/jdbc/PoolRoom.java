package dev.leader.jdbc;

import java.util.function.Supplier;

import javax.sql.DataSource;

import org.springframework.beans.BeanWrapper;
import org.springframework.beans.PropertyAccessorFactory;

/**
 * The startup check that the application's pool leaves it a connection beside those the
 * starter keeps for good, where the data source tells its size (HikariCP's
 * {@code maximumPoolSize}); a pool whose size it cannot read is not checked.
 */
public final class PoolRoom {

	private PoolRoom() {
	}

	/**
	 * Checks the pool's size.
	 * @param dataSource the pool
	 * @param kept the connections the starter keeps
	 * @param keptBy what keeps them, for the message
	 * @throws IllegalStateException if the pool is not larger than that
	 */
	public static void require(DataSource dataSource, int kept, Supplier<String> keptBy) {
		BeanWrapper properties = PropertyAccessorFactory.forBeanPropertyAccess(dataSource);
		if (!properties.isReadableProperty("maximumPoolSize")
				|| !(properties.getPropertyValue("maximumPoolSize") instanceof Integer size) || size > kept) {
			return;
		}
		throw new IllegalStateException(keptBy.get() + ", and the DataSource's pool has maximum-pool-size " + size
				+ ", which leaves nothing for the heartbeats' reads, the guards and the application: set "
				+ "spring.datasource.hikari.maximum-pool-size to at least " + (kept + 1)
				+ " (more with the application's own load), or name fewer groups");
	}

}
