package dev.leader.jdbc;

import java.time.Duration;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.lease.CoordinationStore;
import dev.leader.test.AbstractCoordinationStoreContractTests;
import dev.leader.test.MariaDbTestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * {@link MariaDbCoordinationStore} against the machine's MariaDB passes the coordination
 * store contract, in a fresh database for the class, migrated by the starter's own Flyway
 * migrations and emptied before each test. It announces no releases.
 */
class MariaDbCoordinationStoreTests extends AbstractCoordinationStoreContractTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	private static MariaDbTestDatabase database;

	private static HikariDataSource dataSource;

	@BeforeAll
	static void createDatabase() {
		database = MariaDbTestDatabase.create();
		// One connection per racing node in the fuzz test, and some to spare.
		dataSource = database.dataSource(12);
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
	protected CoordinationStore createStore() {
		database.clear();
		return new MariaDbCoordinationStore(dataSource, PREFIX, Duration.ofSeconds(3));
	}

}
