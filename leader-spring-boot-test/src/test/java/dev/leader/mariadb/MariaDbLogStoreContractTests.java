package dev.leader.mariadb;

import java.time.Duration;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.jdbc.TablePrefix;
import dev.leader.test.AbstractLogStoreContractTests;
import dev.leader.test.MigratedMariaDb;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link MariaDbLogStore} against the machine's MariaDB passes the log store contract, in
 * a fresh database for the class, emptied before each test. It keeps every entry, and
 * tells its own listeners of the appends made through it.
 */
class MariaDbLogStoreContractTests extends AbstractLogStoreContractTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	@RegisterExtension
	static final MigratedMariaDb database = new MigratedMariaDb(10);

	@Override
	protected Stores createStores() {
		HikariDataSource dataSource = database.dataSource();
		MariaDbCoordinationStore coordination = new MariaDbCoordinationStore(dataSource, PREFIX, Duration.ofSeconds(5));
		return new Stores(coordination,
				new MariaDbLogStore(dataSource, PREFIX, Duration.ofSeconds(5), Duration.ofSeconds(10), coordination));
	}

	@Override
	protected void destroyStores(Stores stores) {
		((MariaDbCoordinationStore) stores.coordination()).disconnect();
	}

	@Override
	protected boolean hasRetention() {
		return false;
	}

}
