package dev.leader.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.HikariPoolMXBean;
import dev.leader.DaemonAgent;
import dev.leader.DaemonStoppedEvent;
import dev.leader.DaemonStoppedEvent.Reason;
import dev.leader.FencingToken;
import dev.leader.Leadership;
import dev.leader.actuate.LeadershipEndpoint;
import dev.leader.actuate.LeadershipEndpoint.AssignmentDescriptor;
import dev.leader.daemon.DaemonCoordinator;
import dev.leader.daemon.DaemonSettings;
import dev.leader.lease.LeaderEngine;
import dev.leader.test.Leftovers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.simple.JdbcClient;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Tests for the daemon part of {@link LeaderAutoConfiguration}, each against a fresh
 * PostgreSQL schema.
 */
class DaemonAutoConfigurationTests {

	private static final Duration WAIT = Duration.ofSeconds(10);

	@RegisterExtension
	final SchemaContextRunners schema = new SchemaContextRunners();

	private final ApplicationContextRunner contextRunner = this.schema.runner(LeaderEndpointAutoConfiguration.class)
		.withPropertyValues("leader.node.id=test-node", "leader.lease.renew-interval=200ms",
				"leader.daemons.settle-window=0s", "management.endpoints.web.exposure.include=leadership");

	@Test
	void defaultsGiveACoordinatorWithTheDocumentedSettings() {
		this.schema.runner().run((context) -> {
			assertThat(context).hasSingleBean(DaemonCoordinator.class);
			assertThat(context.getBean(DaemonSettings.class)).isEqualTo(DaemonSettings.defaults());
			assertThat(context.getBean(DaemonCoordinator.class).daemons()).isEmpty();
		});
	}

	@Test
	void daemonAgentBeanRunsOnTheOnlyNodeAndShowsInTheLeadershipEndpoint() {
		this.contextRunner.withUserConfiguration(AgentsConfiguration.class).run((context) -> {
			DaemonEvents events = context.getBean(DaemonEvents.class);
			await().atMost(WAIT).until(() -> events.started("steady") > 0);
			await().atMost(WAIT)
				.until(() -> context.getBean(LeadershipEndpoint.class).leadership().assignments(),
						(assignments) -> assignments.stream()
							.anyMatch((assignment) -> assignment.daemon().equals("steady")
									&& assignment.state().equals("ACTIVE") && assignment.node().equals("test-node")));
			AssignmentDescriptor steady = context.getBean(LeadershipEndpoint.class)
				.leadership()
				.assignments()
				.stream()
				.filter((assignment) -> assignment.daemon().equals("steady"))
				.findFirst()
				.orElseThrow();
			assertThat(steady.generation()).isEqualTo(1);
			assertThat(context.getBean(DaemonCoordinator.class).daemons()).containsExactly("renamed-flaky", "steady");
		});
	}

	@Test
	void agentThatThrowsIsReportedAndRestartedWithBackOff() {
		this.contextRunner.withUserConfiguration(AgentsConfiguration.class).run((context) -> {
			DaemonEvents events = context.getBean(DaemonEvents.class);
			await().atMost(WAIT).until(() -> events.started("renamed-flaky") >= 3);
			List<DaemonStoppedEvent> failures = events.stopped("renamed-flaky");
			assertThat(failures).hasSize(2).allSatisfy((stopped) -> {
				assertThat(stopped.reason()).isEqualTo(Reason.FAILED);
				assertThat(stopped.failure()).hasMessage("boom");
			});
			assertThat(context.getBean(FlakyAgent.class).calls.get()).isEqualTo(3);
		});
	}

	@Test
	void backOffStartsAgainFromOneSecondAfterARunThatOutlastedIt() {
		this.contextRunner.withBean("late-failing", DaemonAgent.class, LateFailingAgent::new).run((context) -> {
			LateFailingAgent agent = (LateFailingAgent) context.getBean("late-failing", DaemonAgent.class);
			await().atMost(WAIT).until(() -> agent.starts.size() >= 4);
			List<Long> starts = agent.starts;
			// Two quick failures wait 1 s, then 2 s; the third run lasted 2.5 s, longer
			// than the 2 s it waited, so its failure waits 1 s again rather than 4 s.
			assertThat(Duration.ofNanos(starts.get(2) - agent.lastFailure)).isNegative();
			assertThat(Duration.ofNanos(starts.get(2) - starts.get(1))).isGreaterThanOrEqualTo(Duration.ofSeconds(2));
			assertThat(Duration.ofNanos(starts.get(3) - agent.lastFailure)).isBetween(Duration.ofMillis(900),
					Duration.ofSeconds(3));
		});
	}

	@Test
	void closingTheContextHandsTheDaemonsBackBeforeTheNodeDeregisters() {
		JdbcClient[] jdbc = new JdbcClient[1];
		this.contextRunner.withUserConfiguration(AgentsConfiguration.class).run((context) -> {
			jdbc[0] = JdbcClient.create(context.getBean(javax.sql.DataSource.class));
			await().atMost(WAIT).until(() -> context.getBean(DaemonEvents.class).started("steady") > 0);
			await().atMost(WAIT)
				.until(() -> jdbc[0].sql("SELECT state FROM leader_assignments WHERE daemon_name = 'steady'")
					.query(String.class)
					.optional(), (state) -> state.equals(java.util.Optional.of("ACTIVE")));
		});
		// This node was the only one, and the leader: only its own hand-over can have
		// deleted the assignment.
		try (var dataSource = this.schema.database().dataSource(1)) {
			JdbcClient client = JdbcClient.create(dataSource);
			assertThat(client.sql("SELECT state FROM leader_assignments WHERE daemon_name = 'steady'")
				.query(String.class)
				.single()).isEqualTo("DELETED");
			assertThat(client.sql("SELECT count(*) FROM leader_nodes").query(Long.class).single()).isZero();
		}
	}

	@Test
	void closingTheLeaderHandsItsLeaseOverBeforeItsDaemonDrainsAndTheDaemonNeverRunsOnTwoNodes() {
		ApplicationContextRunner nodes = this.contextRunner
			.withBean("slow", SlowToDrainAgent.class, SlowToDrainAgent::new)
			.withPropertyValues("leader.daemons.drain-timeout=5s");
		nodes.withPropertyValues("leader.node.id=a").run((a) -> {
			Leadership leaderA = a.getBean(Leadership.class);
			SlowToDrainAgent agentA = a.getBean(SlowToDrainAgent.class);
			await().atMost(WAIT).until(() -> leaderA.isLeader("default") && agentA.startedAt != 0);
			nodes.withPropertyValues("leader.node.id=b").run((b) -> {
				Leadership leaderB = b.getBean(Leadership.class);
				SlowToDrainAgent agentB = b.getBean(SlowToDrainAgent.class);
				await().atMost(WAIT).until(() -> leaderB.leader("default").isPresent());
				Thread closing = new Thread(a::close, "close-a");
				closing.start();
				await().atMost(WAIT).until(() -> leaderB.isLeader("default"));
				long ledAt = System.nanoTime();
				await().atMost(WAIT).until(() -> agentB.startedAt != 0);
				closing.join(WAIT.toMillis());
				assertThat(agentA.returnedAt).as("a's agent returned").isNotZero();
				assertThat(ledAt).as("b leads before a's daemon drained").isLessThan(agentA.returnedAt);
				assertThat(agentB.startedAt).as("the daemon starts on b after it returned on a")
					.isGreaterThan(agentA.returnedAt);
			});
		});
	}

	@Test
	void contextStoppedAndStartedTwentyTimesLeadsAndRunsItsDaemonAgainAndKeepsNoThreadOrConnectionWhileStopped() {
		String applicationName = "restart-" + this.schema.database().schema();
		Set<Thread> threadsBefore = Leftovers.leaderThreads();
		AtomicInteger runs = new AtomicInteger();
		this.contextRunner
			.withPropertyValues(
					"spring.datasource.url=" + this.schema.database().url() + "&ApplicationName=" + applicationName)
			.withBean("steady", DaemonAgent.class, () -> (context) -> {
				runs.incrementAndGet();
				context.awaitCancellation(Duration.ofMinutes(1));
			})
			.run((context) -> {
				LeaderEngine engine = context.getBean(LeaderEngine.class);
				DaemonCoordinator coordinator = context.getBean(DaemonCoordinator.class);
				HikariPoolMXBean pool = context.getBean(HikariDataSource.class).getHikariPoolMXBean();
				long term = 0;
				long generation = 0;
				for (int cycle = 1; cycle <= 20; cycle++) {
					if (cycle > 1) {
						context.start();
					}
					long termBefore = term;
					term = await().atMost(WAIT)
						.until(() -> engine.token("default").map(FencingToken::term).orElse(0L),
								(now) -> now > termBefore);
					long generationBefore = generation;
					generation = await().atMost(WAIT)
						.until(() -> coordinator.running().getOrDefault("steady", 0L), (now) -> now > generationBefore);
					int runsSoFar = cycle;
					await().atMost(WAIT).until(runs::get, (count) -> count == runsSoFar);
					assertThat(Leftovers.leaderThreads()).extracting(Thread::getName)
						.contains("leader-io", "leader-listen", "leader-daemons", "leader-daemon-steady");
					assertThat(pool.getActiveConnections()).isPositive();
					context.stop();
					assertThat(engine.isLeader("default")).isFalse();
					assertThat(coordinator.running()).isEmpty();
					assertThat(Leftovers.leaderThreads()).isSubsetOf(threadsBefore);
					assertThat(pool.getActiveConnections()).isZero();
					// Every session under the application's name is an idle connection of
					// its pool, which may still be opening or retiring one.
					await().atMost(Duration.ofSeconds(5))
						.until(() -> Leftovers.sessions(this.schema.database(), applicationName),
								(now) -> now == pool.getTotalConnections());
				}
			});
	}

	@Test
	void coordinatorStoppedAndStartedAloneUndoesTheDrainOfItsStopAndRunsItsDaemonAgain() {
		this.contextRunner
			.withBean("steady", DaemonAgent.class, () -> (context) -> context.awaitCancellation(Duration.ofMinutes(1)))
			.run((context) -> {
				DaemonCoordinator coordinator = context.getBean(DaemonCoordinator.class);
				JdbcClient jdbc = JdbcClient.create(context.getBean(javax.sql.DataSource.class));
				long generation = await().atMost(WAIT)
					.until(() -> coordinator.running().getOrDefault("steady", 0L), (now) -> now > 0);
				coordinator.stop();
				// The engine goes on heartbeating this node, so the drain of the
				// hand-over stays.
				assertThat(drained(jdbc, "test-node")).isTrue();
				coordinator.start();
				await().atMost(WAIT).until(() -> coordinator.running().getOrDefault("steady", 0L) > generation);
				assertThat(drained(jdbc, "test-node")).isFalse();
			});
	}

	@Test
	void daemonAssignmentCanBeSwitchedOff() {
		this.contextRunner.withUserConfiguration(AgentsConfiguration.class)
			.withPropertyValues("leader.daemons.enabled=false")
			.run((context) -> assertThat(context).hasNotFailed().doesNotHaveBean(DaemonCoordinator.class));
	}

	@Test
	void ackTimeoutThatAllowsNoPollFailsStartupOfANodeWithAgentsNamingTheProperties() {
		this.contextRunner.withPropertyValues("leader.daemons.ack-timeout=300ms")
			.withBean("waiter", DaemonAgent.class, () -> (context) -> {
			})
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.hasMessageContaining("leader.daemons.ack-timeout")
				.hasMessageContaining("leader.lease.renew-interval"));
	}

	@Test
	void ackTimeoutShorterThanTwoPollsDoesNotConcernANodeWithoutAgents() {
		this.contextRunner.withPropertyValues("leader.daemons.ack-timeout=300ms")
			.run((context) -> assertThat(context).hasNotFailed().hasSingleBean(DaemonCoordinator.class));
	}

	@Test
	void invalidDaemonGroupFailsStartupNamingTheProperty() {
		this.contextRunner.withPropertyValues("leader.daemons.group=no spaces")
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.hasMessageContaining("leader.daemons.group"));
	}

	@Test
	void invalidDaemonNameFailsStartupNamingTheBean() {
		this.contextRunner.withBean("bad name", DaemonAgent.class, () -> (context) -> {
		})
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.hasMessageContaining("bad name")
				.hasMessageContaining("daemonName()"));
	}

	private static boolean drained(JdbcClient jdbc, String node) {
		return jdbc.sql("SELECT drained FROM leader_nodes WHERE node_id = ?").param(node).query(Boolean.class).single();
	}

	@Configuration(proxyBeanMethods = false)
	static class AgentsConfiguration {

		@Bean
		DaemonAgent steady() {
			return (context) -> context.awaitCancellation(Duration.ofMinutes(1));
		}

		@Bean
		FlakyAgent flaky() {
			return new FlakyAgent();
		}

		@Bean
		DaemonEvents events() {
			return new DaemonEvents();
		}

	}

	/**
	 * Runs until cancelled, then takes 1.5 s to finish its work, within the drain timeout
	 * as an agent that honours its context does; records the {@link System#nanoTime()} of
	 * its start and of its return.
	 */
	static class SlowToDrainAgent implements DaemonAgent {

		volatile long startedAt;

		volatile long returnedAt;

		@Override
		public void run(dev.leader.DaemonContext context) throws Exception {
			this.startedAt = System.nanoTime();
			context.awaitCancellation(Duration.ofMinutes(1));
			Thread.sleep(1500);
			this.returnedAt = System.nanoTime();
		}

		@Override
		public java.util.Optional<String> daemonName() {
			return java.util.Optional.of("slow");
		}

	}

	static class FlakyAgent implements DaemonAgent {

		final AtomicInteger calls = new AtomicInteger();

		@Override
		public void run(dev.leader.DaemonContext context) throws Exception {
			if (this.calls.incrementAndGet() <= 2) {
				throw new IllegalStateException("boom");
			}
			context.awaitCancellation(Duration.ofMinutes(1));
		}

		@Override
		public java.util.Optional<String> daemonName() {
			return java.util.Optional.of("renamed-flaky");
		}

	}

	/**
	 * Fails at once twice, then after 2.5 s, then runs until cancelled; records the
	 * {@link System#nanoTime()} of each start and of its last failure.
	 */
	static class LateFailingAgent implements DaemonAgent {

		final List<Long> starts = new CopyOnWriteArrayList<>();

		volatile long lastFailure;

		@Override
		public void run(dev.leader.DaemonContext context) throws Exception {
			this.starts.add(System.nanoTime());
			int call = this.starts.size();
			if (call == 3) {
				context.awaitCancellation(Duration.ofMillis(2500));
			}
			if (call <= 3) {
				this.lastFailure = System.nanoTime();
				throw new IllegalStateException("failure " + call);
			}
			context.awaitCancellation(Duration.ofMinutes(1));
		}

	}

}
