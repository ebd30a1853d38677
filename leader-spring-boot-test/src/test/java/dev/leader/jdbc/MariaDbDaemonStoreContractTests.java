package dev.leader.jdbc;

import java.time.Duration;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.test.AbstractDaemonStoreContractTests;
import dev.leader.test.MariaDbTestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/**
 * {@link MariaDbDaemonStore} against the machine's MariaDB passes the daemon store
 * contract, in a fresh database for the class, emptied before each test.
 */
class MariaDbDaemonStoreContractTests extends AbstractDaemonStoreContractTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	private static MariaDbTestDatabase database;

	private static HikariDataSource dataSource;

	@BeforeAll
	static void createDatabase() {
		database = MariaDbTestDatabase.create();
		dataSource = database.dataSource(10);
		new LeaderSchemaMigration(dataSource, PREFIX).migrate();
	}

	@AfterAll
	static void dropDatabase() {
		if (dataSource != null) {
			dataSource.close();
		}
		if (database != null) {
			database.drop();
		}
	}

	@Override
	protected Stores createStores() {
		database.clear();
		return new Stores(new MariaDbCoordinationStore(dataSource, PREFIX, Duration.ofSeconds(5)),
				new MariaDbDaemonStore(dataSource, PREFIX, Duration.ofSeconds(5), Duration.ofSeconds(10)),
				new DataSourceTransactionManager(dataSource));
	}

}
