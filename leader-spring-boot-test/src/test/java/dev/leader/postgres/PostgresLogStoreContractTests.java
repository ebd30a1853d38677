package dev.leader.postgres;

import java.time.Duration;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.jdbc.TablePrefix;
import dev.leader.test.AbstractLogStoreContractTests;
import dev.leader.test.MigratedSchema;

/**
 * {@link PostgresLogStore} against a real PostgreSQL passes the log store contract, with
 * retention and append notifications, in a fresh schema per test.
 * {@link PostgresLogStoreTests} covers what is PostgreSQL's own: batches and the
 * heartbeat's reads of the logs' ends.
 */
class PostgresLogStoreContractTests extends AbstractLogStoreContractTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	private final MigratedSchema schema = new MigratedSchema(10);

	@Override
	protected Stores createStores() {
		HikariDataSource dataSource = this.schema.create();
		PostgresCoordinationStore coordination = new PostgresCoordinationStore(dataSource, PREFIX,
				Duration.ofSeconds(5));
		return new Stores(coordination,
				new PostgresLogStore(dataSource, PREFIX, Duration.ofSeconds(5), Duration.ofSeconds(10), coordination));
	}

	@Override
	protected void destroyStores(Stores stores) {
		((PostgresCoordinationStore) stores.coordination()).disconnect();
		this.schema.drop();
	}

	@Override
	protected boolean hasRetention() {
		return true;
	}

}
