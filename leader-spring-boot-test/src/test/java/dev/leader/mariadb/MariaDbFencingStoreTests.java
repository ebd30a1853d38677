package dev.leader.mariadb;

import java.time.Duration;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.jdbc.TablePrefix;
import dev.leader.test.AbstractFencingStoreContractTests;
import dev.leader.test.MigratedMariaDb;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/**
 * {@link MariaDbFencingStore} against the machine's MariaDB passes the fencing store
 * contract, in a fresh database for the class, emptied before each test.
 */
class MariaDbFencingStoreTests extends AbstractFencingStoreContractTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	@RegisterExtension
	static final MigratedMariaDb database = new MigratedMariaDb(12);

	@Override
	protected Stores createStores() {
		HikariDataSource dataSource = database.dataSource();
		MariaDbCoordinationStore coordination = new MariaDbCoordinationStore(dataSource, PREFIX, Duration.ofSeconds(5));
		return new Stores(coordination,
				new MariaDbFencingStore(dataSource, PREFIX, Duration.ofSeconds(5), Duration.ofSeconds(5), coordination),
				new DataSourceTransactionManager(dataSource));
	}

}
