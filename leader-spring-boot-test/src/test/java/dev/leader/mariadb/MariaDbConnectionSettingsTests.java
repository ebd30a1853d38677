package dev.leader.mariadb;

import java.sql.Connection;
import java.time.Duration;

import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.CoordinationStore;
import dev.leader.test.AbstractCoordinationStoreContractTests;
import dev.leader.test.MigratedMariaDb;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link MariaDbCoordinationStore} passes the coordination store contract on a pool whose
 * defaults are the opposite of what its statements need: auto-commit off, as JPA setups
 * often have, and {@code SERIALIZABLE}, under which InnoDB turns every plain read into a
 * locking one. The store's transactions commit and run at {@code READ COMMITTED} all the
 * same.
 */
class MariaDbConnectionSettingsTests extends AbstractCoordinationStoreContractTests {

	@RegisterExtension
	static final MigratedMariaDb database = new MigratedMariaDb(12, (config) -> {
		config.setAutoCommit(false);
		config.setTransactionIsolation("TRANSACTION_SERIALIZABLE");
	});

	// Runs before the extension closes the pool.
	@AfterAll
	static void poolKeepsItsConnectionSettings() throws Exception {
		try (Connection connection = database.dataSource().getConnection()) {
			// The pool's defaults are what the application finds after the tests.
			if (connection.getAutoCommit()
					|| connection.getTransactionIsolation() != Connection.TRANSACTION_SERIALIZABLE) {
				throw new AssertionError("The pool's connection settings were not restored");
			}
		}
	}

	@Override
	protected CoordinationStore createStore() {
		return new MariaDbCoordinationStore(database.dataSource(), new TablePrefix("leader_"), Duration.ofSeconds(3));
	}

}
