package dev.leader.autoconfigure;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.FencingToken;
import dev.leader.Leadership;
import dev.leader.StaleLeadershipException;
import dev.leader.actuate.LeaderMeters;
import dev.leader.actuate.LeaderMetrics;
import dev.leader.fencing.Fencing;
import dev.leader.jdbc.LeaderSchemaMigration;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.LeaderEngine;
import dev.leader.lease.LeaseObservations;
import dev.leader.log.Bookmark;
import dev.leader.log.DecisionLog;
import dev.leader.log.LogApplier;
import dev.leader.log.LogEntry;
import dev.leader.postgres.PostgresCoordinationStore;
import dev.leader.test.Grants;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration;
import org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * Tests for {@link LeaderMetricsAutoConfiguration} and the engine's observations, against
 * a fresh PostgreSQL schema: the meters report the values of a node that leads, yields
 * and fences.
 */
class LeaderMetricsAutoConfigurationTests {

	@RegisterExtension
	final SchemaContextRunners schema = new SchemaContextRunners();

	private final ApplicationContextRunner contextRunner = this.schema
		.runner(ObservationAutoConfiguration.class, MetricsAutoConfiguration.class,
				CompositeMeterRegistryAutoConfiguration.class, SimpleMetricsExportAutoConfiguration.class,
				LeaderMetricsAutoConfiguration.class)
		.withPropertyValues("leader.node.id=metrics-node", "leader.lease.duration=2s",
				"leader.lease.renew-interval=300ms", "leader.lease.retry-interval=300ms",
				"leader.lease.safety-margin=100ms", "leader.node.expiry=2s", "leader.lease.yield-cooldown=5s");

	@Test
	void metricsReportTheLeadershipTermTransitionsAndRoundTripsOfThisNode() {
		this.contextRunner.run((context) -> {
			assertThat(context).hasSingleBean(LeaderMetrics.class);
			Leadership leadership = context.getBean(Leadership.class);
			MeterRegistry registry = context.getBean(MeterRegistry.class);
			await().atMost(Duration.ofSeconds(10)).until(() -> leadership.isLeader("default"));
			long term = leadership.token("default").orElseThrow().term();
			assertThat(gauge(registry, LeaderMeters.LEADER, "group", "default")).isEqualTo(1);
			await().atMost(Duration.ofSeconds(2))
				.until(() -> gauge(registry, LeaderMeters.TERM, "group", "default") == term);
			assertThat(gauge(registry, LeaderMeters.LEASE_REMAINING, "group", "default")).isPositive()
				.isLessThanOrEqualTo(1.9);
			assertThat(gauge(registry, LeaderMeters.NODES, "state", "alive")).isEqualTo(1);
			assertThat(gauge(registry, LeaderMeters.NODES, "state", "dead")).isZero();
			await().atMost(Duration.ofSeconds(2))
				.until(() -> transitions(registry, "granted", "none"), (count) -> count == 1);
			Timer acquired = registry.get(LeaseObservations.ACQUIRE.getName())
				.tag("group", "default")
				.tag("outcome", "granted")
				.timer();
			assertThat(acquired.count()).isOne();
			assertThat(acquired.totalTime(TimeUnit.SECONDS)).isPositive().isLessThan(2);
			// Renewals: the round trips made while holding the lease, every 300 ms.
			await().atMost(Duration.ofSeconds(3))
				.until(() -> heartbeats(registry, "leader", "success"), (count) -> count >= 3);

			assertThat(leadership.yield("default")).isTrue();
			assertThat(gauge(registry, LeaderMeters.LEADER, "group", "default")).isZero();
			assertThat(gauge(registry, LeaderMeters.LEASE_REMAINING, "group", "default")).isZero();
			await().atMost(Duration.ofSeconds(2))
				.until(() -> transitions(registry, "revoked", "yielded"), (count) -> count == 1);
			// Cooling down after the yield, the node heartbeats as a follower.
			await().atMost(Duration.ofSeconds(3))
				.until(() -> heartbeats(registry, "follower", "success"), (count) -> count >= 2);
		});
	}

	@Test
	void leaderlessTimerMeasuresTheGapBetweenACrashedLeadersLeaseAndTheNextTerm() {
		// A node that crashed while holding the lease: it will never renew nor release
		// it.
		HikariDataSource dataSource = this.schema.database().dataSource(3);
		try {
			new LeaderSchemaMigration(dataSource, new TablePrefix("leader_")).migrate();
			Grants.acquire(new PostgresCoordinationStore(dataSource, new TablePrefix("leader_"), Duration.ofSeconds(2)),
					"default", "crashed-node", Duration.ofMillis(1500));
		}
		finally {
			dataSource.close();
		}
		this.contextRunner.run((context) -> {
			Leadership leadership = context.getBean(Leadership.class);
			MeterRegistry registry = context.getBean(MeterRegistry.class);
			await().atMost(Duration.ofSeconds(10)).until(() -> leadership.isLeader("default"));
			assertThat(leadership.token("default").orElseThrow().term()).isEqualTo(2);
			// Recorded on the I/O thread right after the grant, so it may trail the
			// leadership by a moment.
			Timer leaderless = await().atMost(Duration.ofSeconds(2))
				.until(() -> registry.find(LeaderMeters.LEADERLESS.getName()).tag("group", "default").timer(),
						(timer) -> timer != null && timer.count() > 0);
			assertThat(leaderless.count()).isOne();
			// The gap after the crashed node's lease, not the lease itself (1.5 s): this
			// node acquired within its jitter and a round trip on an idle machine (under
			// 50 ms), with slack for a loaded one.
			assertThat(leaderless.totalTime(TimeUnit.MILLISECONDS)).isLessThan(1500);
		});
	}

	@Test
	void fencingRejectionsAreCounted() {
		this.contextRunner.run((context) -> {
			Leadership leadership = context.getBean(Leadership.class);
			MeterRegistry registry = context.getBean(MeterRegistry.class);
			Fencing fencing = context.getBean(Fencing.class);
			await().atMost(Duration.ofSeconds(10)).until(() -> leadership.isLeader("default"));
			FencingToken current = leadership.token("default").orElseThrow();
			TransactionTemplate transactions = new TransactionTemplate(
					new DataSourceTransactionManager(context.getBean(javax.sql.DataSource.class)));
			transactions.executeWithoutResult((status) -> fencing.guard(current));
			assertThat(registry.get(LeaderMeters.FENCING_REJECTIONS.getName()).functionCounter().count()).isZero();
			FencingToken stale = new FencingToken("default", current.term() - 1);
			for (int i = 0; i < 2; i++) {
				assertThatExceptionOfType(StaleLeadershipException.class)
					.isThrownBy(() -> transactions.executeWithoutResult((status) -> fencing.guard(stale)));
			}
			assertThat(registry.get(LeaderMeters.FENCING_REJECTIONS.getName()).functionCounter().count()).isEqualTo(2);
		});
	}

	@Test
	void decisionLogMetricsReportLagStalenessApplyTimeAndFollowerReadsByOutcome() {
		this.contextRunner.withBean(GatedApplier.class).run((context) -> {
			Leadership leadership = context.getBean(Leadership.class);
			MeterRegistry registry = context.getBean(MeterRegistry.class);
			DecisionLog log = context.getBean(DecisionLog.class);
			GatedApplier applier = context.getBean(GatedApplier.class);
			assertThat(leadership.awaitLeadership("rates", Duration.ofSeconds(10))).isTrue();
			FencingToken token = leadership.token("rates").orElseThrow();
			Bookmark first = log.append(token, "rate", "EUR 1.08");
			await().atMost(Duration.ofSeconds(10)).until(() -> log.applied("rates").equals(first));
			assertThat(log.awaitApplied(first, Duration.ofSeconds(1))).isTrue();
			assertThat(reads(registry, "local")).isOne();
			Bookmark second = log.append(token, "rate", "EUR 1.09");
			await().atMost(Duration.ofSeconds(10))
				.until(() -> gauge(registry, LeaderMeters.LOG_LAG, "group", "rates") == 1);
			assertThat(log.awaitApplied(second, Duration.ofMillis(100))).isFalse();
			assertThat(reads(registry, "rejected")).isOne();
			CompletableFuture<Boolean> waiting = new CompletableFuture<>();
			Thread reader = new Thread(() -> {
				try {
					waiting.complete(log.awaitApplied(second, Duration.ofSeconds(10)));
				}
				catch (Throwable ex) {
					waiting.completeExceptionally(ex);
				}
			});
			reader.start();
			await().atMost(Duration.ofSeconds(10)).until(() -> reader.getState() == Thread.State.TIMED_WAITING);
			applier.gate.release(100);
			assertThat(waiting.get(10, TimeUnit.SECONDS)).isTrue();
			assertThat(reads(registry, "waited")).isOne();
			assertThat(log.awaitReadIndex("rates", Duration.ofSeconds(5))).isTrue();
			assertThat(log.awaitStaleness("rates", Duration.ofSeconds(30), Duration.ofSeconds(5))).isTrue();
			assertThat(reads(registry, "local")).isEqualTo(3);
			log.forwarded("rates");
			assertThat(reads(registry, "forwarded")).isOne();
			assertThat(gauge(registry, LeaderMeters.LOG_LAG, "group", "rates")).isZero();
			assertThat(gauge(registry, LeaderMeters.LOG_STALENESS, "group", "rates")).isBetween(0.0, 30.0);
			Timer apply = registry.get(LeaderMeters.LOG_APPLY.getName()).tag("group", "rates").timer();
			assertThat(apply.count()).isEqualTo(2);
			assertThat(apply.max(TimeUnit.MILLISECONDS)).as("the entry that waited at the gate").isPositive();
		});
	}

	@Test
	void metricsBackOffWhenTheApplicationDefinesItsOwn() {
		this.contextRunner
			.withBean("customLeaderMetrics", LeaderMetrics.class,
					() -> new LeaderMetrics(org.mockito.Mockito.mock(LeaderEngine.class),
							org.mockito.Mockito.mock(LeaderEngine.class), null, null, null))
			.run((context) -> assertThat(context).getBean(LeaderMetrics.class)
				.isSameAs(context.getBean("customLeaderMetrics")));
	}

	@Test
	void metricsAreAutoConfiguredWithAnyMeterRegistry() {
		leaderOnly().withBean(SimpleMeterRegistry.class)
			.run((context) -> assertThat(context).hasSingleBean(LeaderMetrics.class));
	}

	@Test
	void metricsAreNotAutoConfiguredWithoutMicrometerOnTheClasspath() {
		leaderOnly().withBean(SimpleMeterRegistry.class)
			.withClassLoader(new FilteredClassLoader(MeterRegistry.class))
			.run((context) -> assertThat(context).hasSingleBean(Leadership.class).doesNotHaveBean(LeaderMetrics.class));
	}

	@Test
	void metricsAreNotAutoConfiguredWithoutAMeterRegistry() {
		leaderOnly()
			.run((context) -> assertThat(context).hasSingleBean(Leadership.class).doesNotHaveBean(LeaderMetrics.class));
	}

	private ApplicationContextRunner leaderOnly() {
		return this.schema.runner(LeaderMetricsAutoConfiguration.class);
	}

	private static double gauge(MeterRegistry registry, LeaderMeters meter, String tag, String value) {
		return registry.get(meter.getName()).tag(tag, value).gauge().value();
	}

	private static double reads(MeterRegistry registry, String outcome) {
		return registry.get(LeaderMeters.LOG_READS.getName())
			.tag("group", "rates")
			.tag("outcome", outcome)
			.counter()
			.count();
	}

	private static double transitions(MeterRegistry registry, String action, String reason) {
		return registry.get(LeaderMeters.TRANSITIONS.getName())
			.tag("group", "default")
			.tag("action", action)
			.tag("reason", reason)
			.counter()
			.count();
	}

	private static long heartbeats(MeterRegistry registry, String role, String outcome) {
		Timer timer = registry.find(LeaseObservations.HEARTBEAT.getName())
			.tag("role", role)
			.tag("outcome", outcome)
			.timer();
		return (timer != null) ? timer.count() : 0;
	}

	/**
	 * Applies the group {@code rates}, holding every entry after the first at a gate.
	 */
	static class GatedApplier implements LogApplier {

		final Semaphore gate = new Semaphore(0);

		@Override
		public String group() {
			return "rates";
		}

		@Override
		public void apply(LogEntry entry) throws InterruptedException {
			if (entry.index() > 1) {
				this.gate.acquire();
			}
		}

	}

}
