package dev.leader.jdbc;

import java.time.Duration;

import dev.leader.lease.CoordinationStore;
import dev.leader.test.AbstractCoordinationStoreContractTests;
import dev.leader.test.MigratedMariaDb;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link MariaDbCoordinationStore} against the machine's MariaDB passes the coordination
 * store contract, in a fresh database for the class, migrated by the starter's own Flyway
 * migrations and emptied before each test. It announces no releases.
 */
class MariaDbCoordinationStoreTests extends AbstractCoordinationStoreContractTests {

	// One connection per racing node in the fuzz test, and some to spare.
	@RegisterExtension
	static final MigratedMariaDb database = new MigratedMariaDb(12);

	@Override
	protected CoordinationStore createStore() {
		return new MariaDbCoordinationStore(database.dataSource(), new TablePrefix("leader_"), Duration.ofSeconds(3));
	}

}
