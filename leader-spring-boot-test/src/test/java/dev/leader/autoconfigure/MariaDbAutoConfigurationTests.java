package dev.leader.autoconfigure;

import java.time.Duration;

import dev.leader.FencingToken;
import dev.leader.Leadership;
import dev.leader.daemon.DaemonStore;
import dev.leader.fencing.FencingStore;
import dev.leader.jdbc.JdbcStoresAutoConfiguration;
import dev.leader.lease.CoordinationStore;
import dev.leader.log.Bookmark;
import dev.leader.log.DecisionLog;
import dev.leader.log.LogApplier;
import dev.leader.log.LogEntry;
import dev.leader.log.LogStore;
import dev.leader.log.RecordingApplier;
import dev.leader.mariadb.MariaDbCoordinationStore;
import dev.leader.mariadb.MariaDbDaemonStore;
import dev.leader.mariadb.MariaDbFencingStore;
import dev.leader.mariadb.MariaDbLogStore;
import dev.leader.mariadb.MariaDbStoresAutoConfiguration;
import dev.leader.postgres.PostgresStoresAutoConfiguration;
import dev.leader.test.MariaDbTestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.simple.JdbcClient;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link LeaderAutoConfiguration} on a MariaDB {@code DataSource}: the MariaDB stores are
 * chosen, the MariaDB migrations create the tables, and a node leads.
 */
class MariaDbAutoConfigurationTests {

	private static MariaDbTestDatabase database;

	@BeforeAll
	static void createDatabase() {
		database = MariaDbTestDatabase.create();
	}

	@AfterAll
	static void dropDatabase() {
		if (database != null) {
			database.drop();
		}
	}

	private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
				PostgresStoresAutoConfiguration.class, MariaDbStoresAutoConfiguration.class,
				JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class))
		.withPropertyValues("spring.datasource.url=" + database.url(), "spring.datasource.username=" + database.user(),
				"spring.datasource.password=" + database.password(), "leader.node.id=maria-node",
				"leader.groups=billing");

	@Test
	void mariaDbDataSourceGetsTheMariaDbStoresItsTablesAndALeader() {
		this.contextRunner.run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(CoordinationStore.class)).isInstanceOf(MariaDbCoordinationStore.class);
			assertThat(context.getBean(FencingStore.class)).isInstanceOf(MariaDbFencingStore.class);
			assertThat(context.getBean(DaemonStore.class)).isInstanceOf(MariaDbDaemonStore.class);
			assertThat(JdbcClient.create(context.getBean(javax.sql.DataSource.class))
				.sql("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()")
				.query(String.class)
				.list()).contains("leader_leases", "leader_lease_terms", "leader_nodes", "leader_assignments",
						"leader_assignment_owners", "leader_fences", "leader_daemon_requests", "leader_log_heads",
						"leader_log_entries", "leader_schema_history");
			Leadership leadership = context.getBean(Leadership.class);
			assertThat(leadership.awaitLeadership("billing", Duration.ofSeconds(10))).isTrue();
			assertThat(leadership.token("billing")).hasValueSatisfying((token) -> assertThat(token.term()).isOne());
		});
	}

	@Test
	void decisionLogOnMariaDbAppendsUnderTheLeadersTermAndItsNodeAppliesTheEntry() {
		RecordingApplier billing = new RecordingApplier("billing");
		this.contextRunner.withBean(LogApplier.class, () -> billing).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(LogStore.class)).isInstanceOf(MariaDbLogStore.class);
			DecisionLog log = context.getBean(DecisionLog.class);
			Leadership leadership = context.getBean(Leadership.class);
			assertThat(leadership.awaitLeadership("billing", Duration.ofSeconds(10))).isTrue();
			FencingToken token = leadership.token("billing").orElseThrow();
			Bookmark entry = log.append(token, "rate", "EUR 1");
			assertThat(entry.term()).isEqualTo(token.term());
			assertThat(log.awaitApplied(entry, Duration.ofSeconds(10))).isTrue();
			assertThat(billing.entries()).extracting(LogEntry::payload).containsExactly("EUR 1");
		});
	}

	@Test
	void crashTakeoverFailsStartupOnMariaDbWithTheWakeUpsOff() {
		this.contextRunner
			.withPropertyValues("leader.lease.crash-takeover-groups=billing", "leader.jdbc.notifications.enabled=false")
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(context).getFailure()
					.rootCause()
					.isInstanceOf(IllegalStateException.class)
					.hasMessageContaining("leader.lease.crash-takeover-groups [billing]")
					.hasMessageContaining("leader.jdbc.notifications.enabled=true");
			});
	}

	@Test
	void crashTakeoverOfTheDaemonsGroupOnAPoolTooSmallForTheConnectionsItKeepsFailsStartupOnMariaDb() {
		this.contextRunner
			.withPropertyValues("spring.datasource.hikari.maximum-pool-size=5",
					"leader.lease.crash-takeover-groups=default")
			.run((context) -> assertThat(context).hasFailed()
				.getFailure()
				.rootCause()
				.hasMessageContaining("leader.lease.crash-takeover-groups [default] keeps at least 5 connections of "
						+ "the pool for good (the session that holds the wake-up locks, its watcher, one waiting for "
						+ "the holder of each such group led elsewhere, one waiting for the next node's session, one "
						+ "waiting to be rung)")
				.hasMessageContaining("set spring.datasource.hikari.maximum-pool-size to at least 6"));
		this.contextRunner
			.withPropertyValues("spring.datasource.hikari.maximum-pool-size=6",
					"leader.lease.crash-takeover-groups=default")
			.run((context) -> assertThat(context).hasNotFailed());
	}

	@Test
	void retentionLimitsFailStartupOnMariaDbWhoseLogKeepsEveryEntry() {
		this.contextRunner.withPropertyValues("leader.log.retention.max-entries=100").run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context).getFailure()
				.rootCause()
				.hasMessageContaining(MariaDbLogStore.class.getName())
				.hasMessageContaining("leader.log.retention.max-entries and max-age cannot be set");
		});
	}

}
