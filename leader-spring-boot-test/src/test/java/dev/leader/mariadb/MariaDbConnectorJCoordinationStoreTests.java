package dev.leader.mariadb;

import java.time.Duration;
import java.util.List;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.CoordinationStore;
import dev.leader.test.AbstractCoordinationStoreContractTests;
import dev.leader.test.ConnectorJ;
import dev.leader.test.Grants;
import dev.leader.test.MigratedMariaDb;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.simple.JdbcClient;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link MariaDbCoordinationStore} reached through MySQL's driver (Connector/J, a
 * {@code jdbc:mysql:} URL) passes the coordination store contract on the machine's
 * MariaDB, as through MariaDB's driver ({@link MariaDbCoordinationStoreTests}).
 */
class MariaDbConnectorJCoordinationStoreTests extends AbstractCoordinationStoreContractTests {

	@RegisterExtension
	static final MigratedMariaDb database = new MigratedMariaDb(12, ConnectorJ::use);

	@Override
	protected CoordinationStore createStore() {
		return new MariaDbCoordinationStore(database.dataSource(), new TablePrefix("leader_"), Duration.ofSeconds(3));
	}

	/**
	 * Connector/J keeps the auto-commit mode that {@code setAutoCommit} set, so the store
	 * switches it through the driver rather than in the statement that lowers the idle
	 * limits, and puts both back.
	 */
	@Test
	void transitionLeavesThePoolsAutoCommitAndIdleLimitsAsTheyWere() {
		try (HikariDataSource single = database.database().dataSource(1, (config) -> {
			ConnectorJ.use(config);
			config.setConnectionInitSql("SET SESSION idle_transaction_timeout = 600");
		})) {
			CoordinationStore store = new MariaDbCoordinationStore(single, new TablePrefix("leader_"),
					Duration.ofSeconds(1));
			assertThat(Grants.acquire(store, "g", "a", Duration.ofSeconds(10)).granted()).isTrue();
			assertThat(JdbcClient.create(single)
				.sql("SELECT @@session.idle_transaction_timeout, @@session.autocommit")
				.query((rows, i) -> List.of(rows.getLong(1), rows.getLong(2)))
				.single()).containsExactly(600L, 1L);
		}
	}

}
