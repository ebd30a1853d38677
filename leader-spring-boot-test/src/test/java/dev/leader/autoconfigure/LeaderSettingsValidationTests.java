package dev.leader.autoconfigure;

import java.time.Duration;
import java.util.stream.Stream;

import javax.sql.DataSource;

import dev.leader.DaemonAgent;
import dev.leader.FencingToken;
import dev.leader.NodeInfo;
import dev.leader.daemon.DaemonGuard;
import dev.leader.daemon.DaemonStore;
import dev.leader.fencing.Fencing;
import dev.leader.lease.LeaderEngine;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;

import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Tests for the startup checks of every {@code leader.*} range and relation: zero,
 * negative, huge and overflowing durations, names too long for their columns, and timings
 * that break the engine, each against a fresh PostgreSQL schema.
 */
class LeaderSettingsValidationTests {

	private static final Duration WAIT = Duration.ofSeconds(10);

	@RegisterExtension
	final SchemaContextRunners schema = new SchemaContextRunners();

	private final ApplicationContextRunner contextRunner = this.schema.runner()
		.withPropertyValues("leader.node.id=test-node");

	static Stream<Arguments> invalidSettings() {
		return Stream.of(
				// Names longer than their columns, or that PostgreSQL would reject.
				invalid("leader.node.name: Invalid node name", "leader.node.name=" + "n".repeat(201)),
				invalid("leader.node.name: Invalid node name", "leader.node.name=   "),
				invalid("leader.node.name: Invalid node name", "leader.node.name=a\u0000b"),
				invalid("spring.application.name, the default of leader.node.name: Invalid node name",
						"spring.application.name=" + "a".repeat(201)),
				invalid("leader.node.id: Invalid node id", "leader.node.id=" + "i".repeat(121)),
				invalid("leader.groups: Invalid group name", "leader.groups=default," + "g".repeat(121)),
				invalid("leader.daemons.group: Invalid group name", "leader.daemons.group=" + "g".repeat(121)),
				invalid("leader.lease.crash-takeover-groups: Invalid group name",
						"leader.lease.crash-takeover-groups=billing,bad name"),
				// The address a node advertises.
				invalid("leader.node.base-url: Invalid base URL 'ftp://node-1:21': the scheme must be http or https",
						"leader.node.base-url=ftp://node-1:21"),
				invalid("leader.node.base-url: Invalid base URL 'node-1:8080': the scheme must be http or https",
						"leader.node.base-url=node-1:8080"),
				invalid("leader.node.base-url: Invalid base URL 'http:///x': it has no host",
						"leader.node.base-url=http:///x"),
				invalid("leader.node.base-url: Invalid base URL 'http://node-1/?a=1': it must have no query",
						"leader.node.base-url=http://node-1/?a=1"),
				invalid("leader.node.base-url: Invalid base URL", "leader.node.base-url=http://n/" + "p".repeat(500)),
				invalid("leader.node.zone: Invalid zone 'eu west': use 1 to 64 letters, digits, '.', '_' or '-'",
						"leader.node.zone=eu west"),
				invalid("leader.node.zone: Invalid zone", "leader.node.zone=" + "z".repeat(65)),
				// Relations.
				invalid("leader.lease.renew-interval (PT5S) must be less than half of leader.lease.duration (PT10S)",
						"leader.lease.renew-interval=5s"),
				invalid("leader.lease.renew-interval (PT3S) plus leader.lease.retry-interval (PT6.8S) plus "
						+ "leader.lease.safety-margin (PT0.2S) must be less than leader.lease.duration (PT10S)",
						"leader.lease.retry-interval=6800ms"),
				invalid("leader.lease.renew-interval (PT3S) plus leader.lease.retry-interval (PT2S) plus "
						+ "leader.lease.safety-margin (PT5S) must be less than leader.lease.duration (PT10S)",
						"leader.lease.safety-margin=5s"),
				invalid("leader.node.expiry (PT5S) must be at least twice leader.lease.renew-interval (PT3S)",
						"leader.node.expiry=5s"),
				invalid("leader.lease.renew-interval (PT3S) plus leader.lease.retry-interval (PT2S) plus "
						+ "leader.lease.safety-margin (PT10S) must be less than leader.node.expiry (PT10S)",
						"leader.lease.duration=60s", "leader.lease.safety-margin=10s"),
				invalid("leader.lease.renew-interval (PT3S) plus leader.lease.retry-interval (PT4S) plus "
						+ "leader.lease.safety-margin (PT0.2S) must be less than leader.node.expiry (PT7S)",
						"leader.lease.duration=60s", "leader.lease.retry-interval=4s", "leader.node.expiry=7s"));
	}

	private static Arguments invalid(String message, String... properties) {
		return Arguments.of(message, properties);
	}

	@ParameterizedTest(name = "{1}")
	@MethodSource("invalidSettings")
	void invalidSettingFailsStartupNamingThePropertyBeforeAnythingIsCreated(String message, String[] properties) {
		assertStartupFailsBeforeAnythingIsCreated(message, properties);
	}

	@ParameterizedTest(name = "{0}")
	@CsvSource(delimiter = '|',
			textBlock = """
					# Ranges of the lease's durations.
					leader.lease.duration=0s                       | leader.lease.duration must be positive, was PT0S
					leader.lease.duration=-10s                     | leader.lease.duration must be positive, was PT-10S
					leader.lease.duration=30d                      | leader.lease.duration must be at most 24 days (PT576H), was PT720H
					leader.lease.duration=PT576H0.001S             | leader.lease.duration must be at most 24 days (PT576H), was PT576H0.001S
					leader.lease.duration=9999999d                 | leader.lease.duration must be at most 24 days (PT576H), was PT239999976H
					leader.lease.renew-interval=0ms                | leader.lease.renew-interval must be positive, was PT0S
					leader.lease.renew-interval=-1s                | leader.lease.renew-interval must be positive, was PT-1S
					leader.lease.renew-interval=30d                | leader.lease.renew-interval must be at most 24 days (PT576H), was PT720H
					leader.lease.retry-interval=0s                 | leader.lease.retry-interval must be positive, was PT0S
					leader.lease.retry-interval=9999999d           | leader.lease.retry-interval must be at most 24 days (PT576H), was PT239999976H
					leader.lease.safety-margin=-1ms                | leader.lease.safety-margin must not be negative, was PT-0.001S
					leader.lease.safety-margin=30d                 | leader.lease.safety-margin must be at most 24 days (PT576H), was PT720H
					leader.lease.yield-cooldown=-1s                | leader.lease.yield-cooldown must not be negative, was PT-1S
					leader.lease.yield-cooldown=9999999d           | leader.lease.yield-cooldown must be at most 24 days (PT576H), was PT239999976H
					leader.node.expiry=0s                          | leader.node.expiry must be positive, was PT0S
					leader.node.expiry=30d                         | leader.node.expiry must be at most 24 days (PT576H), was PT720H
					# Ranges of the decision log's retention.
					leader.log.retention.max-entries=0             | leader.log.retention.max-entries must be at least 1 (or unset to keep any number), was 0
					leader.log.retention.max-age=-1s               | leader.log.retention.max-age must be at least 1ms (or unset for no limit of age), was PT-1S
					leader.log.retention.max-age=3650000d          | leader.log.retention.max-age must be at most 100 years (36500d), was PT87600000H
					leader.log.retention.max-age=PT876000H0.001S   | leader.log.retention.max-age must be at most 100 years (36500d), was PT876000H0.001S
					leader.log.retention.max-age=9999999999999d    | leader.log.retention.max-age must be at most 100 years (36500d), was PT239999999999976H
					leader.log.retention.interval=0s               | leader.log.retention.interval must be positive, was PT0S
					leader.log.retention.interval=30d              | leader.log.retention.interval must be at most 24 days (PT576H), was PT720H
					# Ranges of the daemon settings.
					leader.daemons.ack-timeout=0s                  | leader.daemons.ack-timeout must be positive, was PT0S
					leader.daemons.ack-timeout=30d                 | leader.daemons.ack-timeout must be at most 24 days (PT576H), was PT720H
					leader.daemons.drain-timeout=-1s               | leader.daemons.drain-timeout must be positive, was PT-1S
					leader.daemons.drain-timeout=9999999d          | leader.daemons.drain-timeout must be at most 24 days (PT576H), was PT239999976H
					leader.daemons.settle-window=-1ms              | leader.daemons.settle-window must not be negative, was PT-0.001S
					leader.daemons.settle-window=30d               | leader.daemons.settle-window must be at most 24 days (PT576H), was PT720H
					leader.daemons.max-moves-per-cycle=0           | leader.daemons.max-moves-per-cycle must be at least 1, was 0
					leader.daemons.max-moves-per-cycle=-2147483648 | leader.daemons.max-moves-per-cycle must be at least 1, was -2147483648
					# The query timeout, twice which is the network timeout in int milliseconds.
					leader.jdbc.query-timeout=-1s                  | leader.jdbc.query-timeout must be positive, was PT-1S
					leader.jdbc.query-timeout=PT288H0.001S         | leader.jdbc.query-timeout must be at most 12 days (PT288H), was PT288H0.001S
					leader.jdbc.query-timeout=30d                  | leader.jdbc.query-timeout must be at most 12 days (PT288H), was PT720H
					leader.jdbc.query-timeout=9999999d             | leader.jdbc.query-timeout must be at most 12 days (PT288H), was PT239999976H
					""")
	void settingOutOfItsRangeFailsStartupNamingThePropertyBeforeAnythingIsCreated(String property, String message) {
		assertStartupFailsBeforeAnythingIsCreated(message, property);
	}

	@Test
	void crashTakeoverOfTheDaemonsGroupOnAPoolTooSmallForTheConnectionsItKeepsFailsStartup() {
		this.contextRunner
			.withPropertyValues("spring.datasource.hikari.maximum-pool-size=4",
					"leader.lease.crash-takeover-groups=default")
			.run((context) -> assertThat(context).hasFailed()
				.getFailure()
				.rootCause()
				.hasMessageContaining("leader.lease.crash-takeover-groups [default] keeps up to 4 connections of the "
						+ "pool for good (its round trips, LISTEN, one waiting for the holder of each such group led "
						+ "elsewhere, one waiting for the next node's session)")
				.hasMessageContaining("set spring.datasource.hikari.maximum-pool-size to at least 5"));
		this.contextRunner
			.withPropertyValues("spring.datasource.hikari.maximum-pool-size=5",
					"leader.lease.crash-takeover-groups=default")
			.run((context) -> assertThat(context).hasNotFailed());
	}

	@Test
	void ackTimeoutThatAllowsNoPollFailsStartupOfANodeWithAgentsBeforeAnythingIsCreated() {
		this.contextRunner.withPropertyValues("leader.daemons.ack-timeout=6s")
			.withBean("waiter", DaemonAgent.class, () -> (context) -> {
			})
			.run((context) -> {
				assertThat(context).hasFailed()
					.getFailure()
					.rootCause()
					.hasMessageContaining("leader.daemons.ack-timeout (PT6S) must be more than twice "
							+ "leader.lease.renew-interval (PT3S)");
				assertThat(this.schema.tables()).isEmpty();
			});
	}

	static Stream<Arguments> settingsJustInsideTheLimits() {
		return Stream.of(
				Arguments.of((Object) new String[] { "leader.lease.duration=24d", "leader.node.expiry=24d",
						"leader.lease.yield-cooldown=24d", "leader.daemons.ack-timeout=24d",
						"leader.daemons.drain-timeout=24d", "leader.daemons.settle-window=24d" }),
				Arguments.of((Object) new String[] { "leader.jdbc.query-timeout=12d" }),
				Arguments.of((Object) new String[] { "leader.lease.safety-margin=0s", "leader.lease.yield-cooldown=0s",
						"leader.daemons.settle-window=0s", "leader.daemons.max-moves-per-cycle=2147483647" }),
				// 3 s + 6.799 s + 200 ms is 1 ms short of both the lease duration and the
				// node expiry.
				Arguments.of((Object) new String[] { "leader.lease.retry-interval=6799ms" }),
				Arguments.of((Object) new String[] { "leader.lease.renew-interval=4999ms",
						"leader.lease.retry-interval=1ms", "leader.node.expiry=9998ms" }),
				Arguments.of((Object) new String[] { "leader.node.id=" + "i".repeat(120),
						"leader.node.name=" + "n".repeat(200), "leader.groups=" + "g".repeat(120),
						"leader.daemons.group=" + "d".repeat(120) }),
				Arguments.of((Object) new String[] { "spring.application.name=" + "\u00e9".repeat(200) }));
	}

	@ParameterizedTest(name = "{0}")
	@MethodSource("settingsJustInsideTheLimits")
	void settingsJustInsideTheLimitsStartAndGuardTransactions(String[] properties) {
		this.contextRunner.withPropertyValues(properties).run((context) -> {
			assertThat(context).hasNotFailed();
			LeaderEngine engine = context.getBean(LeaderEngine.class);
			String group = engine.groups().iterator().next();
			await().atMost(WAIT).until(() -> engine.isLeader(group));
			await().atMost(WAIT)
				.until(() -> engine.members().stream().map(NodeInfo::id).anyMatch(engine.nodeId()::equals));
			NodeInfo self = engine.members()
				.stream()
				.filter((member) -> member.id().equals(engine.nodeId()))
				.findFirst()
				.orElseThrow();
			assertThat(self.name()).isEqualTo(expectedName(properties));
			// Both guards hand PostgreSQL an idle timeout derived from the lease or the
			// node expiry.
			TransactionTemplate transactions = new TransactionTemplate(
					new DataSourceTransactionManager(context.getBean(DataSource.class)));
			FencingToken token = engine.token(group).orElseThrow();
			transactions.executeWithoutResult((status) -> {
				context.getBean(Fencing.class).guard(token);
				assertThat(((DaemonGuard) context.getBean(DaemonStore.class)).lock("never-assigned")).isNull();
			});
		});
	}

	@Test
	void configuredBaseUrlAndZoneAreAdvertisedInTheMembership() {
		this.contextRunner
			.withPropertyValues("leader.node.base-url=https://node-1.example.com:8443/app/",
					"leader.node.zone=" + "z".repeat(64))
			.run((context) -> {
				assertThat(context).hasNotFailed();
				LeaderEngine engine = context.getBean(LeaderEngine.class);
				await().atMost(WAIT)
					.untilAsserted(() -> assertThat(engine.members()).filteredOn(NodeInfo::id, engine.nodeId())
						.singleElement()
						.extracting(NodeInfo::baseUrl, NodeInfo::zone)
						.containsExactly("https://node-1.example.com:8443/app", "z".repeat(64)));
			});
	}

	private void assertStartupFailsBeforeAnythingIsCreated(String message, String... properties) {
		this.contextRunner.withPropertyValues(properties).run((context) -> {
			assertThat(context).hasFailed().getFailure().rootCause().hasMessageContaining(message);
			assertThat(this.schema.tables()).isEmpty();
		});
	}

	private static String expectedName(String[] properties) {
		for (String prefix : new String[] { "leader.node.name=", "spring.application.name=" }) {
			for (String property : properties) {
				if (property.startsWith(prefix)) {
					return property.substring(prefix.length());
				}
			}
		}
		return "application";
	}

}
