package dev.leader.postgres;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.stream.Stream;

import javax.sql.DataSource;

import dev.leader.DaemonAgent;
import dev.leader.FencingToken;
import dev.leader.Leadership;
import dev.leader.StaleLeadershipException;
import dev.leader.autoconfigure.LeaderAutoConfiguration;
import dev.leader.daemon.DaemonCoordinator;
import dev.leader.fencing.Fencing;
import dev.leader.jdbc.JdbcStoresAutoConfiguration;
import dev.leader.mariadb.MariaDbStoresAutoConfiguration;
import dev.leader.test.TemporaryPgBouncer;
import dev.leader.test.TemporaryPostgres;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * Runs two application nodes through PgBouncer, in session and in transaction pooling
 * mode, against a PostgreSQL server of the test's own: elections, renewals, guards,
 * daemons and the graceful hand-over. In transaction mode, where {@code LISTEN} does not
 * follow a client, a node finds that at startup and follows no notifications, unless it
 * is given a connection of its own for them.
 */
@ExtendWith(OutputCaptureExtension.class)
class PgBouncerTests {

	private static final Duration LEASE = Duration.ofSeconds(5);

	private static final Duration WAIT = Duration.ofSeconds(20);

	private static TemporaryPostgres server;

	private static final Map<String, TemporaryPgBouncer> bouncers = new HashMap<>();

	private final List<ConfigurableApplicationContext> nodes = new ArrayList<>();

	private String database;

	@BeforeAll
	static void startServers() {
		server = TemporaryPostgres.start("max_connections = 100");
		for (String mode : List.of("session", "transaction")) {
			bouncers.put(mode, TemporaryPgBouncer.start(server.port(), mode));
		}
	}

	@AfterAll
	static void stopServers() {
		bouncers.values().forEach(TemporaryPgBouncer::close);
		bouncers.clear();
		server.close();
	}

	@BeforeEach
	void createDatabase() throws SQLException {
		this.database = "b_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12).toLowerCase(Locale.ROOT);
		try (Connection connection = server.connect(); Statement statement = connection.createStatement()) {
			statement.execute("CREATE DATABASE " + this.database);
		}
	}

	@AfterEach
	void dropDatabase() throws SQLException {
		this.nodes.forEach(ConfigurableApplicationContext::close);
		try (Connection connection = server.connect(); Statement statement = connection.createStatement()) {
			statement.execute("DROP DATABASE " + this.database + " WITH (FORCE)");
		}
	}

	static Stream<Arguments> connections() {
		return Stream.of(
				Arguments.of("session", false, "Notifications follow a LISTEN connection of the starter's DataSource"),
				Arguments.of("transaction", false, "through a pooler in transaction mode"),
				Arguments.of("transaction", true, "Notifications follow a connection of their own"));
	}

	@ParameterizedTest(name = "{0} pooling, direct notification connection: {1}")
	@MethodSource("connections")
	void electionsRenewalsGuardsDaemonsAndHandOverWorkThroughPgBouncer(String mode, boolean direct, String announced,
			CapturedOutput output) {
		ConfigurableApplicationContext first = start("node-a", mode, direct);
		ConfigurableApplicationContext second = start("node-b", mode, direct);
		await().atMost(WAIT).until(() -> leaders(first, second).size() == 1);
		assertThat(output).contains(announced);
		// Beyond the log line: each node LISTENs on a server session of its own, or,
		// through a transaction pooler without a connection of its own for them, has sent
		// no LISTEN at all.
		int listening = (mode.equals("transaction") && !direct) ? 0 : 2;
		await().atMost(WAIT).until(() -> listeningSessions() == listening);
		assertThat(output).doesNotContain("prepareThreshold=0 to spring.datasource.url");
		ConfigurableApplicationContext leader = leaders(first, second).get(0);
		ConfigurableApplicationContext follower = (leader == first) ? second : first;
		FencingToken token = leader.getBean(Leadership.class).token("default").orElseThrow();

		// Renewals: the lease outlives its duration under the same term, held by the same
		// node throughout.
		await("the same leader and term for longer than the lease").during(LEASE.plusSeconds(1))
			.atMost(LEASE.plusSeconds(5))
			.until(() -> leader.getBean(Leadership.class).token("default").equals(Optional.of(token))
					&& !follower.getBean(Leadership.class).isLeader("default"));

		// Guards: the leader's guarded write commits, the follower's is rejected.
		JdbcClient.create(leader.getBean(DataSource.class)).sql("CREATE TABLE fenced_log (term bigint)").update();
		inGuardedTransaction(leader, token);
		assertThat(JdbcClient.create(leader.getBean(DataSource.class))
			.sql("SELECT term FROM fenced_log")
			.query(Long.class)
			.list()).containsExactly(token.term());
		assertThatExceptionOfType(StaleLeadershipException.class)
			.isThrownBy(() -> inGuardedTransaction(follower, token));

		// Daemons: the one daemon runs on exactly one node.
		await().atMost(WAIT).until(() -> running(first) + running(second) == 1);

		// The graceful hand-over: the follower is granted the next term well before the
		// lease would have expired.
		long stopped = System.nanoTime();
		leader.close();
		await().atMost(LEASE.minusSeconds(2)).until(() -> follower.getBean(Leadership.class).isLeader("default"));
		Duration handOver = Duration.ofNanos(System.nanoTime() - stopped);
		assertThat(follower.getBean(Leadership.class).token("default").orElseThrow().term())
			.isGreaterThan(token.term());
		await().atMost(WAIT).until(() -> running(follower) == 1);
		System.out.println("PgBouncer " + mode + " pooling, direct notifications " + direct + ": hand-over took "
				+ handOver.toMillis() + " ms, close included");
	}

	@Test
	void notificationUrlOfAnotherDatabaseIsRejectedWithoutItsCredentials() {
		new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
					PostgresStoresAutoConfiguration.class, MariaDbStoresAutoConfiguration.class,
					JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class))
			.withPropertyValues(
					"spring.datasource.url=" + bouncers.get("transaction").url(this.database, "prepareThreshold=0"),
					"spring.datasource.username=postgres",
					"leader.jdbc.notifications.url=jdbc:mysql://127.0.0.1/app?password=secret")
			.run((context) -> assertThat(context).hasFailed()
				.getFailure()
				.rootCause()
				.hasMessageContaining("leader.jdbc.notifications.url must be a PostgreSQL JDBC URL")
				.hasMessageContaining("jdbc:mysql://127.0.0.1/app")
				.hasMessageNotContaining("secret"));
	}

	@Test
	void crashTakeoverIsRefusedThroughATransactionPoolerUnlessNotificationsHaveADirectConnection() {
		ApplicationContextRunner runner = new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
					PostgresStoresAutoConfiguration.class, MariaDbStoresAutoConfiguration.class,
					JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class))
			.withPropertyValues(
					"spring.datasource.url=" + bouncers.get("transaction").url(this.database, "prepareThreshold=0"),
					"spring.datasource.username=postgres", "leader.lease.crash-takeover-groups=billing");
		runner.run((context) -> assertThat(context).hasFailed()
			.getFailure()
			.rootCause()
			.hasMessageContaining("leader.lease.crash-takeover-groups [billing] needs sessions")
			.hasMessageContaining("through a pooler in transaction mode")
			.hasMessageContaining("leader.jdbc.notifications.url"));
		runner
			.withPropertyValues(
					"leader.jdbc.notifications.url=jdbc:postgresql://127.0.0.1:" + server.port() + "/" + this.database)
			.run((context) -> assertThat(context).hasNotFailed());
	}

	private ConfigurableApplicationContext start(String node, String mode, boolean direct) {
		List<String> properties = new ArrayList<>(List.of(
				"spring.datasource.url="
						+ bouncers.get(mode).url(this.database, mode.equals("transaction") ? "prepareThreshold=0" : ""),
				"spring.datasource.username=postgres", "spring.datasource.hikari.maximum-pool-size=5",
				"leader.node.id=" + node, "leader.lease.duration=" + LEASE.toMillis() + "ms",
				"leader.lease.renew-interval=300ms", "leader.lease.retry-interval=300ms",
				"leader.daemons.settle-window=0s"));
		if (direct) {
			properties.add(
					"leader.jdbc.notifications.url=jdbc:postgresql://127.0.0.1:" + server.port() + "/" + this.database);
		}
		ConfigurableApplicationContext context = new SpringApplicationBuilder(Node.class).web(WebApplicationType.NONE)
			.properties(properties.toArray(String[]::new))
			.run();
		this.nodes.add(context);
		return context;
	}

	private int listeningSessions() throws SQLException {
		try (Connection connection = server.connect();
				PreparedStatement statement = connection.prepareStatement(
						"SELECT count(*) FROM pg_stat_activity WHERE datname = ? AND query LIKE 'LISTEN %'")) {
			statement.setString(1, this.database);
			try (ResultSet row = statement.executeQuery()) {
				row.next();
				return row.getInt(1);
			}
		}
	}

	private static List<ConfigurableApplicationContext> leaders(ConfigurableApplicationContext... nodes) {
		return Stream.of(nodes).filter((node) -> node.getBean(Leadership.class).isLeader("default")).toList();
	}

	private static int running(ConfigurableApplicationContext node) {
		return node.isActive() ? node.getBean(DaemonCoordinator.class).running().size() : 0;
	}

	private static void inGuardedTransaction(ConfigurableApplicationContext node, FencingToken token) {
		DataSource dataSource = node.getBean(DataSource.class);
		new TransactionTemplate(new DataSourceTransactionManager(dataSource)).executeWithoutResult((status) -> {
			node.getBean(Fencing.class).guard(token);
			JdbcClient.create(dataSource).sql("INSERT INTO fenced_log VALUES (?)").param(token.term()).update();
		});
	}

	@Configuration(proxyBeanMethods = false)
	@ImportAutoConfiguration({ DataSourceAutoConfiguration.class, PostgresStoresAutoConfiguration.class,
			MariaDbStoresAutoConfiguration.class, JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class })
	static class Node {

		@Bean
		DaemonAgent steady() {
			return (context) -> context.awaitCancellation(Duration.ofMinutes(1));
		}

	}

}
