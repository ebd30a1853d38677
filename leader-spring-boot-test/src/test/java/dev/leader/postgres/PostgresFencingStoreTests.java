package dev.leader.postgres;

import java.time.Duration;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.jdbc.TablePrefix;
import dev.leader.test.AbstractFencingStoreContractTests;
import dev.leader.test.MigratedSchema;

import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/**
 * {@link PostgresFencingStore} against a real PostgreSQL, in a fresh schema per test,
 * migrated by the starter's own Flyway migrations.
 */
class PostgresFencingStoreTests extends AbstractFencingStoreContractTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	private final MigratedSchema schema = new MigratedSchema(12);

	@Override
	protected Stores createStores() {
		HikariDataSource dataSource = this.schema.create();
		return new Stores(new PostgresCoordinationStore(dataSource, PREFIX, Duration.ofSeconds(5)),
				new PostgresFencingStore(dataSource, PREFIX, Duration.ofSeconds(5), Duration.ofSeconds(5)),
				new DataSourceTransactionManager(dataSource));
	}

	@Override
	protected void destroyStores(Stores stores) {
		this.schema.drop();
	}

}
