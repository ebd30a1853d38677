package dev.leader.jdbc;

import java.time.Duration;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.test.AbstractDaemonStoreContractTests;
import dev.leader.test.TestDatabase;

import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/**
 * {@link PostgresDaemonStore} against a real PostgreSQL passes the daemon store contract,
 * in a fresh schema per test. {@link PostgresDaemonStoreTests} covers what is
 * PostgreSQL's own: the heartbeat snapshot and the row locks.
 */
class PostgresDaemonStoreContractTests extends AbstractDaemonStoreContractTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	private TestDatabase database;

	private HikariDataSource dataSource;

	@Override
	protected Stores createStores() {
		this.database = TestDatabase.createSchema();
		this.dataSource = this.database.dataSource(10);
		new LeaderSchemaMigration(this.dataSource, PREFIX).migrate();
		return new Stores(new PostgresCoordinationStore(this.dataSource, PREFIX, Duration.ofSeconds(5)),
				new PostgresDaemonStore(this.dataSource, PREFIX, Duration.ofSeconds(5), Duration.ofSeconds(10)),
				new DataSourceTransactionManager(this.dataSource));
	}

	@Override
	protected void destroyStores(Stores stores) {
		this.dataSource.close();
		this.database.drop();
	}

}
