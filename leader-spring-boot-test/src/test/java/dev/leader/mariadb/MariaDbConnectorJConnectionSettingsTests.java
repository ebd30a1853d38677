package dev.leader.mariadb;

import java.sql.Connection;
import java.time.Duration;

import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.CoordinationStore;
import dev.leader.test.AbstractCoordinationStoreContractTests;
import dev.leader.test.ConnectorJ;
import dev.leader.test.MigratedMariaDb;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link MariaDbCoordinationStore} through MySQL's driver (Connector/J) passes the
 * coordination store contract on a pool with auto-commit off at {@code SERIALIZABLE}, as
 * through MariaDB's driver ({@link MariaDbConnectionSettingsTests}), and leaves the
 * pool's settings as they were.
 */
class MariaDbConnectorJConnectionSettingsTests extends AbstractCoordinationStoreContractTests {

	@RegisterExtension
	static final MigratedMariaDb database = new MigratedMariaDb(12, (config) -> {
		ConnectorJ.use(config);
		config.setAutoCommit(false);
		config.setTransactionIsolation("TRANSACTION_SERIALIZABLE");
	});

	// Runs before the extension closes the pool.
	@AfterAll
	static void poolKeepsItsConnectionSettings() throws Exception {
		try (Connection connection = database.dataSource().getConnection()) {
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
