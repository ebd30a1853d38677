package dev.leader.jdbc;

import java.sql.Connection;
import java.time.Duration;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leader.lease.CoordinationStore;
import dev.leader.test.AbstractCoordinationStoreContractTests;
import dev.leader.test.MariaDbTestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * {@link MariaDbCoordinationStore} passes the coordination store contract on a pool whose
 * defaults are the opposite of what its statements need: auto-commit off, as JPA setups
 * often have, and {@code SERIALIZABLE}, under which InnoDB turns every plain read into a
 * locking one. The store's transactions commit and run at {@code READ COMMITTED} all the
 * same.
 */
class MariaDbConnectionSettingsTests extends AbstractCoordinationStoreContractTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	private static MariaDbTestDatabase database;

	private static HikariDataSource dataSource;

	@BeforeAll
	static void createDatabase() {
		database = MariaDbTestDatabase.create();
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(database.url());
		config.setUsername(database.user());
		config.setPassword(database.password());
		config.setMaximumPoolSize(12);
		config.setAutoCommit(false);
		config.setTransactionIsolation("TRANSACTION_SERIALIZABLE");
		dataSource = new HikariDataSource(config);
		new LeaderSchemaMigration(dataSource, PREFIX).migrate();
	}

	@AfterAll
	static void dropDatabase() throws Exception {
		if (dataSource != null) {
			try (Connection connection = dataSource.getConnection()) {
				// The pool's defaults are what the application finds after the tests.
				if (connection.getAutoCommit()
						|| connection.getTransactionIsolation() != Connection.TRANSACTION_SERIALIZABLE) {
					throw new AssertionError("The pool's connection settings were not restored");
				}
			}
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
