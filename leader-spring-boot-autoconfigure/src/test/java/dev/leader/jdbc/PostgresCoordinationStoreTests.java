package dev.leader.jdbc;

import java.time.Duration;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.lease.AbstractCoordinationStoreContractTests;
import dev.leader.lease.CoordinationStore;
import dev.leader.test.TestDatabase;

/**
 * {@link PostgresCoordinationStore} against a real PostgreSQL, in a fresh schema per test, migrated by the starter's
 * own Flyway migrations.
 */
class PostgresCoordinationStoreTests extends AbstractCoordinationStoreContractTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	private TestDatabase database;

	private HikariDataSource dataSource;

	@Override
	protected CoordinationStore createStore() {
		this.database = TestDatabase.createSchema();
		// One connection per racing node in the fuzz test, one for the release listener, and some to spare.
		this.dataSource = this.database.dataSource(12);
		new LeaderSchemaMigration(this.dataSource, PREFIX).migrate();
		return new PostgresCoordinationStore(this.dataSource, PREFIX, Duration.ofSeconds(3));
	}

	@Override
	protected void destroyStore(CoordinationStore store) {
		if (this.dataSource != null) {
			this.dataSource.close();
		}
		if (this.database != null) {
			this.database.drop();
		}
	}

	@Override
	protected boolean supportsReleaseNotifications() {
		return true;
	}

}
