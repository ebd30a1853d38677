package dev.leader.jdbc;

import java.time.Duration;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.test.AbstractFencingStoreContractTests;
import dev.leader.test.TestDatabase;

import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/**
 * {@link PostgresFencingStore} against a real PostgreSQL, in a fresh schema per test,
 * migrated by the starter's own Flyway migrations.
 */
class PostgresFencingStoreTests extends AbstractFencingStoreContractTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	private TestDatabase database;

	private HikariDataSource dataSource;

	@Override
	protected Stores createStores() {
		this.database = TestDatabase.createSchema();
		this.dataSource = this.database.dataSource(12);
		new LeaderSchemaMigration(this.dataSource, PREFIX).migrate();
		return new Stores(new PostgresCoordinationStore(this.dataSource, PREFIX, Duration.ofSeconds(5)),
				new PostgresFencingStore(this.dataSource, PREFIX, Duration.ofSeconds(5), Duration.ofSeconds(5)),
				new DataSourceTransactionManager(this.dataSource));
	}

	@Override
	protected void destroyStores(Stores stores) {
		this.dataSource.close();
		this.database.drop();
	}

}
