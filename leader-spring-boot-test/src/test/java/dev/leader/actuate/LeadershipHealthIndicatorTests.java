package dev.leader.actuate;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leader.jdbc.LeaderSchemaMigration;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.LeaderEngine;
import dev.leader.lease.LeaseSettings;
import dev.leader.node.NodeRegistration;
import dev.leader.postgres.PostgresCoordinationStore;
import dev.leader.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@link LeadershipHealthIndicator} against real PostgreSQL, with the database made
 * unreachable for the node by refusing its role's logins and terminating its sessions.
 */
class LeadershipHealthIndicatorTests {

	private static final LeaseSettings FAST = new LeaseSettings(Duration.ofSeconds(2), Duration.ofMillis(400),
			Duration.ofMillis(400), Duration.ofMillis(100), Duration.ofSeconds(1), Duration.ofSeconds(2));

	private TestDatabase database;

	private String role;

	private HikariDataSource dataSource;

	private LeaderEngine engine;

	@BeforeEach
	void startNode() throws SQLException {
		this.database = TestDatabase.createSchema();
		this.role = "r_" + this.database.schema();
		execute("CREATE ROLE " + this.role + " LOGIN",
				"GRANT ALL ON SCHEMA " + this.database.schema() + " TO " + this.role);
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(this.database.url());
		config.setUsername(this.role);
		config.setMaximumPoolSize(3);
		config.setConnectionTimeout(500);
		this.dataSource = new HikariDataSource(config);
		new LeaderSchemaMigration(this.dataSource, new TablePrefix("leader_")).migrate();
		this.engine = new LeaderEngine(
				new PostgresCoordinationStore(this.dataSource, new TablePrefix("leader_"), Duration.ofSeconds(1)), FAST,
				new NodeRegistration("health-node", "health", "localhost", ProcessHandle.current().pid()),
				List.of("default"), (event) -> {
				});
		this.engine.start();
	}

	@AfterEach
	void stopNode() throws SQLException {
		this.engine.stop();
		this.dataSource.close();
		this.database.drop();
		execute("ALTER ROLE " + this.role + " LOGIN",
				"SELECT pg_terminate_backend(pid) FROM pg_stat_activity " + "WHERE usename = '" + this.role + "'",
				"DROP ROLE " + this.role);
	}

	@Test
	void healthIsUpWithTheRolesWhileTheDatabaseAnswersAndDownOncePastTheNodeExpiryWithout() throws SQLException {
		LeadershipHealthIndicator indicator = new LeadershipHealthIndicator(this.engine);
		await().atMost(Duration.ofSeconds(5)).until(() -> this.engine.isLeader("default"));
		Health up = indicator.health(true);
		assertThat(up.getStatus()).isEqualTo(Status.UP);
		LeadershipHealthAssertions.assertLeadsTheDefaultGroup(up, "health-node", FAST.safeWindow().toMillis());
		execute("ALTER ROLE " + this.role + " NOLOGIN",
				"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '" + this.role + "'");
		long cutOff = System.nanoTime();
		await().atMost(Duration.ofSeconds(5)).until(() -> indicator.health(true).getStatus().equals(Status.DOWN));
		Duration downAfter = Duration.ofNanos(System.nanoTime() - cutOff);
		// Never before the node expiry has passed since the last contact, which was at
		// most one renewal earlier.
		assertThat(downAfter).isGreaterThanOrEqualTo(FAST.nodeExpiry().minus(FAST.renewInterval()));
		assertThat(indicator.health(true).getDetails()).containsEntry("coordinator", "unreachable");
		assertThat((String) indicator.health(true).getDetails().get("reason")).contains("coordinator unreachable for")
			.contains("past the node expiry of 1000 ms");
		// The safe window outlasts this node expiry; once it closes, the details show the
		// step-down.
		await().atMost(Duration.ofSeconds(3))
			.until(() -> indicator.health(true).getDetails().get("roles"), Map.of("default", "FOLLOWER")::equals);
		execute("ALTER ROLE " + this.role + " LOGIN");
		await().atMost(Duration.ofSeconds(5)).until(() -> indicator.health(true).getStatus().equals(Status.UP));
	}

	private void execute(String... statements) throws SQLException {
		try (Connection connection = this.database.connect(); Statement statement = connection.createStatement()) {
			for (String sql : statements) {
				statement.execute(sql);
			}
		}
	}

}
