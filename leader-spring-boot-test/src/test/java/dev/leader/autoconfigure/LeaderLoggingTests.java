package dev.leader.autoconfigure;

import java.time.Duration;
import java.util.UUID;
import java.util.regex.Pattern;

import dev.leader.Leadership;
import dev.leader.jdbc.JdbcStoresAutoConfiguration;
import dev.leader.jdbc.LeaderSchemaMigration;
import dev.leader.jdbc.TablePrefix;
import dev.leader.mariadb.MariaDbStoresAutoConfiguration;
import dev.leader.postgres.PostgresStoresAutoConfiguration;
import dev.leader.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The log of a whole application at Spring Boot's default INFO level, against a fresh
 * PostgreSQL schema: one line per transition with group, node, action, term and latency,
 * nothing for the steady-state heartbeat, and never the datasource password. PostgreSQL
 * here trusts the test user, so any password is accepted and none is needed.
 */
@ExtendWith(OutputCaptureExtension.class)
class LeaderLoggingTests {

	private static final Pattern TRANSITION = Pattern.compile("Leader group=\\S+ node=\\S+ action=\\S+ term=\\d+");

	private static final Pattern HEARTBEAT_WARNING = Pattern.compile("WARN .* Leader node \\S+ heartbeat failed");

	private TestDatabase database;

	@BeforeEach
	void createSchema() {
		this.database = TestDatabase.createSchema();
	}

	@AfterEach
	void dropSchema() {
		this.database.drop();
	}

	@Test
	void transitionsAreLoggedOnceAtInfoWithLatencyAndTheDatasourcePasswordNever(CapturedOutput output) {
		String password = "pw-" + UUID.randomUUID();
		try (ConfigurableApplicationContext context = new SpringApplicationBuilder(LoggedApplication.class)
			.web(WebApplicationType.NONE)
			.run("--spring.datasource.url=" + this.database.url(),
					"--spring.datasource.username=" + this.database.user(), "--spring.datasource.password=" + password,
					"--leader.node.id=log-node", "--leader.lease.duration=2s", "--leader.lease.renew-interval=200ms",
					"--leader.lease.retry-interval=500ms", "--leader.lease.safety-margin=100ms",
					"--leader.node.expiry=2s", "--leader.lease.yield-cooldown=30s")) {
			Leadership leadership = context.getBean(Leadership.class);
			await().atMost(Duration.ofSeconds(10)).until(() -> leadership.isLeader("default"));
			// Several renewals, none of which may log at INFO.
			await().pollDelay(Duration.ofSeconds(1)).until(() -> true);
			assertThat(leadership.yield("default")).isTrue();
		}
		assertThat(output)
			.containsPattern("INFO .* Leader group=default node=log-node action=granted term=1 latency=\\d+ms(\\R|$)");
		assertThat(output)
			.containsPattern("INFO .* Leader group=default node=log-node action=revoked term=1 reason=YIELDED "
					+ "latency=local(\\R|$)");
		assertThat(TRANSITION.matcher(output.getOut()).results().count()).isEqualTo(2);
		assertThat(output).doesNotContain("heartbeat").doesNotContain(password);
	}

	/**
	 * The issue that asked for it: a node whose heartbeats all failed (MySQL's driver
	 * against MariaDB) logged nothing, and never led. Here the starter's tables are
	 * missing ({@code leader.jdbc.migrate=false}), so every heartbeat fails until they
	 * are created.
	 */
	@Test
	void heartbeatThatKeepsFailingIsOneWarningWithItsReasonAndItsRecoveryOneInfo(CapturedOutput output) {
		try (ConfigurableApplicationContext context = new SpringApplicationBuilder(LoggedApplication.class)
			.web(WebApplicationType.NONE)
			.run("--spring.datasource.url=" + this.database.url(),
					"--spring.datasource.username=" + this.database.user(),
					"--spring.datasource.password=" + this.database.password(), "--leader.jdbc.migrate=false",
					"--leader.node.id=failing-node", "--leader.lease.duration=2s",
					"--leader.lease.renew-interval=200ms", "--leader.lease.retry-interval=200ms",
					"--leader.lease.safety-margin=100ms", "--leader.node.expiry=2s")) {
			await().atMost(Duration.ofSeconds(10))
				.untilAsserted(() -> assertThat(output).containsPattern("WARN .* Leader node failing-node heartbeat "
						+ "failed; until one succeeds this node renews no lease and reads none, and the other nodes "
						+ "count it dead after the node expiry; retrying every 200 ms: .*leader_(nodes|leases).* does not exist"));
			// Ten more failures at least, none of which may warn again within the minute.
			await().pollDelay(Duration.ofSeconds(2)).until(() -> true);
			assertThat(HEARTBEAT_WARNING.matcher(output.getOut()).results().count()).isOne();
			new LeaderSchemaMigration(this.database.unpooled(), new TablePrefix("leader_")).migrate();
			Leadership leadership = context.getBean(Leadership.class);
			await().atMost(Duration.ofSeconds(10)).until(() -> leadership.isLeader("default"));
			assertThat(output).containsPattern(
					"INFO .* Leader node failing-node heartbeat succeeded again after \\d+ failed attempts over \\d+ s");
			assertThat(HEARTBEAT_WARNING.matcher(output.getOut()).results().count()).isOne();
		}
	}

	@Configuration(proxyBeanMethods = false)
	@ImportAutoConfiguration({ DataSourceAutoConfiguration.class, PostgresStoresAutoConfiguration.class,
			MariaDbStoresAutoConfiguration.class, JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class })
	static class LoggedApplication {

	}

}
