package dev.leader.postgres;

import java.time.Duration;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.jdbc.TablePrefix;
import dev.leader.test.AbstractDaemonStoreContractTests;
import dev.leader.test.MigratedSchema;

import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/**
 * {@link PostgresDaemonStore} against a real PostgreSQL passes the daemon store contract,
 * in a fresh schema per test. {@link PostgresDaemonStoreTests} covers what is
 * PostgreSQL's own: the heartbeat snapshot and the row locks.
 */
class PostgresDaemonStoreContractTests extends AbstractDaemonStoreContractTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	private final MigratedSchema schema = new MigratedSchema(10);

	@Override
	protected Stores createStores() {
		HikariDataSource dataSource = this.schema.create();
		return new Stores(new PostgresCoordinationStore(dataSource, PREFIX, Duration.ofSeconds(5)),
				new PostgresDaemonStore(dataSource, PREFIX, Duration.ofSeconds(5), Duration.ofSeconds(10)),
				new DataSourceTransactionManager(dataSource));
	}

	@Override
	protected void destroyStores(Stores stores) {
		this.schema.drop();
	}

}
