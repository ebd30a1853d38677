package dev.leader.autoconfigure;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import dev.leader.DaemonAgent;
import dev.leader.FencingToken;
import dev.leader.LeaderInfo;
import dev.leader.LeaderOnly;
import dev.leader.Leadership;
import dev.leader.NodeInfo;
import dev.leader.NotLeaderException;
import dev.leader.actuate.LeaderMetrics;
import dev.leader.actuate.LeadershipEndpoint;
import dev.leader.actuate.LeadershipHealthIndicator;
import dev.leader.daemon.DaemonCoordinator;
import dev.leader.daemon.DaemonStore;
import dev.leader.fencing.FencingStore;
import dev.leader.jdbc.LeaderSchemaMigration;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.Enrolment;
import dev.leader.lease.LeaderEngine;
import dev.leader.lease.LeaseMonitor;
import dev.leader.lease.LeaseSettings;
import dev.leader.lease.LeaseState;
import dev.leader.lease.LeaseStatus;
import dev.leader.log.LogStore;
import dev.leader.node.NodeRegistration;
import dev.leader.postgres.PostgresCoordinationStore;
import dev.leader.postgres.PostgresDaemonStore;
import dev.leader.postgres.PostgresFencingStore;
import dev.leader.postgres.PostgresLogStore;
import dev.leader.postgres.PostgresStoreFamily;
import org.assertj.core.api.AbstractThrowableAssert;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration;
import org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.util.ClassUtils;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * Tests for {@link LeaderAutoConfiguration}, each against a fresh PostgreSQL schema.
 */
class LeaderAutoConfigurationTests {

	private static final Duration WAIT = Duration.ofSeconds(10);

	// Package-private next to @LeaderOnly, so named here.
	private static final Class<?> LEADER_ONLY_ADVISOR = ClassUtils.resolveClassName("dev.leader.LeaderOnlyAdvisor",
			null);

	@RegisterExtension
	final SchemaContextRunners schema = new SchemaContextRunners();

	private ApplicationContextRunner contextRunner = this.schema.runner()
		.withPropertyValues("leader.node.id=test-node");

	@Test
	void defaultsGiveLeadershipOnPostgresWithTheDocumentedSettings() {
		this.contextRunner.run((context) -> {
			assertThat(context).hasSingleBean(TablePrefix.class)
				.hasSingleBean(LeaseSettings.class)
				.hasSingleBean(CoordinationStore.class)
				.hasSingleBean(Leadership.class)
				.hasSingleBean(LeaderEngineLifecycle.class)
				.hasSingleBean(LEADER_ONLY_ADVISOR)
				.hasSingleBean(LeaderSchemaMigration.class);
			assertThat(context.getBean(TablePrefix.class)).isEqualTo(new TablePrefix("leader_"));
			assertThat(context.getBean(LeaseSettings.class))
				.isEqualTo(new LeaseSettings(Duration.ofSeconds(10), Duration.ofSeconds(3), Duration.ofSeconds(2),
						Duration.ofMillis(200), Duration.ofSeconds(10), Duration.ofSeconds(10)));
			assertThat(context.getBean(CoordinationStore.class)).isInstanceOf(PostgresCoordinationStore.class);
			Leadership leadership = context.getBean(Leadership.class);
			assertThat(leadership).isInstanceOf(LeaderEngine.class);
			assertThat(leadership.nodeId()).isEqualTo("test-node");
			assertThat(leadership.groups()).containsExactly("default");
			assertThat(context.getBean(LeaderEngineLifecycle.class).isRunning()).isTrue();
		});
	}

	@Test
	void startupCreatesTheStarterTablesWithTheirOwnHistoryTable() {
		this.contextRunner.run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(this.schema.tables()).containsExactlyInAnyOrder("leader_leases", "leader_nodes", "leader_fences",
					"leader_log_heads", "leader_log_entries", "leader_log_starts", "leader_assignments",
					"leader_daemon_requests", "leader_schema_history");
		});
	}

	@Test
	void groupsFromPropertiesAndFromLeaderOnlyAnnotationsAllTakePart() {
		this.contextRunner.withBean(Jobs.class)
			.withPropertyValues("leader.groups=alpha,beta")
			.run((context) -> assertThat(context.getBean(Leadership.class).groups()).containsExactlyInAnyOrder("alpha",
					"beta", "jobs"));
	}

	@Test
	void invalidGroupInLeaderOnlyFailsStartupNamingTheBeanAndTheGroup() {
		this.contextRunner.withBean("invalidGroupJob", InvalidGroupJob.class).run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context).getFailure()
				.hasStackTraceContaining("@LeaderOnly on bean 'invalidGroupJob'")
				.rootCause()
				.hasMessageContaining("Invalid group name 'not a group'");
		});
	}

	@Test
	void invalidGroupInPropertiesFailsStartupNamingTheProperty() {
		this.contextRunner.withPropertyValues("leader.groups=billing,not a group")
			.run((context) -> assertThatRootCause(context).hasMessageContaining("leader.groups")
				.hasMessageContaining("Invalid group name 'not a group'"));
	}

	@Test
	void invalidNodeIdFailsStartupNamingTheProperty() {
		this.contextRunner.withPropertyValues("leader.node.id=-starts-with-dash")
			.run((context) -> assertThatRootCause(context).hasMessageContaining("leader.node.id")
				.hasMessageContaining("Invalid node id '-starts-with-dash'"));
	}

	@Test
	void leaderOnlyMethodRunsOnceThisNodeLeadsUnderItsFencingToken() {
		this.contextRunner.withBean(Jobs.class).run((context) -> {
			Leadership leadership = context.getBean(Leadership.class);
			Jobs jobs = context.getBean(Jobs.class);
			await().atMost(WAIT).until(() -> leadership.isLeader("jobs"));
			jobs.run();
			assertThat(jobs.runs()).isEqualTo(1);
			assertThat(jobs.token()).isEqualTo(leadership.token("jobs").orElseThrow());
			assertThat(jobs.report()).contains("report");
			assertThat(jobs.total()).isEqualTo("total");
		});
	}

	@Test
	void leaderOnlyCallsAreSkippedWhileAnotherNodeLeads() throws SQLException {
		leaseHeldByAnotherNode("jobs");
		this.contextRunner.withBean(Jobs.class).run((context) -> {
			Leadership leadership = context.getBean(Leadership.class);
			Jobs jobs = context.getBean(Jobs.class);
			await().atMost(WAIT)
				.until(() -> leadership.leader("jobs").map(LeaderInfo::nodeId), (leader) -> leader.isPresent());
			assertThat(leadership.leader("jobs")).map(LeaderInfo::nodeId).contains("other-node");
			assertThat(leadership.isLeader("jobs")).isFalse();
			jobs.run();
			assertThat(jobs.runs()).isEqualTo(0);
			assertThat(jobs.report()).isEmpty();
			assertThatExceptionOfType(NotLeaderException.class).isThrownBy(jobs::total)
				.satisfies((ex) -> assertThat(ex.getGroup()).isEqualTo("jobs"));
		});
	}

	@Test
	void whenNotLeaderThrowMakesSkippedVoidCallsThrowToo() throws SQLException {
		leaseHeldByAnotherNode("jobs");
		this.contextRunner.withBean(Jobs.class)
			.withPropertyValues("leader.leader-only.when-not-leader=throw")
			.run((context) -> {
				Jobs jobs = context.getBean(Jobs.class);
				assertThatExceptionOfType(NotLeaderException.class).isThrownBy(jobs::run)
					.withMessageContaining("does not lead group 'jobs'");
				assertThatExceptionOfType(NotLeaderException.class).isThrownBy(jobs::report);
				assertThat(jobs.runs()).isEqualTo(0);
			});
	}

	@Test
	void leaderOnlyCallIsInterruptedWhenItsLeadershipEndsUnlessTurnedOff() {
		assertThat(interruptedByAYield()).isTrue();
		this.contextRunner = this.contextRunner.withPropertyValues("leader.leader-only.interrupt-on-revoke=false");
		assertThat(interruptedByAYield()).isFalse();
	}

	// Yields the group while a @LeaderOnly call waits, and tells whether that call was
	// interrupted.
	private boolean interruptedByAYield() {
		AtomicBoolean interrupted = new AtomicBoolean();
		this.contextRunner.withBean(Jobs.class).run((context) -> {
			Leadership leadership = context.getBean(Leadership.class);
			assertThat(leadership.awaitLeadership("jobs", WAIT)).isTrue();
			Jobs jobs = context.getBean(Jobs.class);
			CompletableFuture<Boolean> call = CompletableFuture.supplyAsync(() -> jobs.waitUntilInterrupted(WAIT));
			await().atMost(WAIT).until(jobs::waiting);
			assertThat(leadership.yield("jobs")).isTrue();
			interrupted.set(call.get(WAIT.toSeconds() + 5, TimeUnit.SECONDS));
		});
		return interrupted.get();
	}

	@Test
	void userDefinedCoordinationStoreIsUsedByTheEngine() {
		this.contextRunner.withBean(RecordingCoordinationStore.class, RecordingCoordinationStore::new)
			.run((context) -> {
				assertThat(context).hasSingleBean(CoordinationStore.class)
					.getBean(CoordinationStore.class)
					.isSameAs(context.getBean(RecordingCoordinationStore.class));
				RecordingCoordinationStore store = context.getBean(RecordingCoordinationStore.class);
				await().atMost(WAIT).untilAsserted(() -> assertThat(store.ticks).hasPositiveValue());
			});
	}

	@Test
	void userDefinedLeaseSettingsAreUsedByTheEngine() {
		this.contextRunner.withBean(LeaseSettings.class, LeaderAutoConfigurationTests::customLeaseSettings)
			.run((context) -> {
				assertThat(context).hasSingleBean(LeaseSettings.class);
				assertThat(context.getBean(LeaderEngine.class).settings())
					.isSameAs(context.getBean(LeaseSettings.class))
					.extracting(LeaseSettings::duration)
					.isEqualTo(Duration.ofSeconds(30));
			});
	}

	@Test
	void userDefinedTablePrefixNamesTheTables() {
		this.contextRunner.withBean(TablePrefix.class, () -> new TablePrefix("custom_")).run((context) -> {
			assertThat(context).hasSingleBean(TablePrefix.class);
			assertThat(this.schema.tables()).containsExactlyInAnyOrder("custom_leases", "custom_nodes", "custom_fences",
					"custom_log_heads", "custom_log_entries", "custom_log_starts", "custom_assignments",
					"custom_daemon_requests", "custom_schema_history");
		});
	}

	@Test
	void userDefinedLeadershipReplacesTheEngineAndDecidesLeaderOnlyCalls() {
		this.contextRunner.withBean(Leadership.class, FixedLeadership::new).withBean(Jobs.class).run((context) -> {
			assertThat(context).hasNotFailed()
				.hasSingleBean(Leadership.class)
				.doesNotHaveBean(LeaderEngine.class)
				.doesNotHaveBean(LeaderEngineLifecycle.class);
			Jobs jobs = context.getBean(Jobs.class);
			jobs.run();
			assertThat(jobs.runs()).isEqualTo(1);
			assertThat(jobs.token()).isEqualTo(new FencingToken("jobs", 7));
		});
	}

	@Test
	void userDefinedLeadershipWithTheStatusAndEnrolmentViewsKeepsTheDaemonsTheEndpointAndTheMetrics() {
		this.schema
			.runner(LeaderEndpointAutoConfiguration.class, ObservationAutoConfiguration.class,
					MetricsAutoConfiguration.class, CompositeMeterRegistryAutoConfiguration.class,
					SimpleMetricsExportAutoConfiguration.class, LeaderMetricsAutoConfiguration.class)
			.withPropertyValues("leader.node.id=test-node", "management.endpoints.web.exposure.include=leadership")
			.withBean(ViewedLeadership.class, ViewedLeadership::new)
			.withBean("steady", DaemonAgent.class, () -> (context) -> {
			})
			.run((context) -> {
				assertThat(context).hasNotFailed()
					.doesNotHaveBean(LeaderEngine.class)
					.hasSingleBean(DaemonCoordinator.class)
					.hasSingleBean(LeadershipEndpoint.class)
					.hasSingleBean(LeadershipHealthIndicator.class)
					.hasSingleBean(LeaderMetrics.class);
				ViewedLeadership leadership = (ViewedLeadership) context.getBean(Leadership.class);
				assertThat(leadership.enrolledGroups).containsExactly("default");
				assertThat(leadership.advertisedDaemons).containsExactly("steady");
				assertThat(leadership.monitor).isSameAs(context.getBean(LeaderMetrics.class));
				assertThat(context.getBean(LeadershipEndpoint.class).leadership().node()).isEqualTo("fixed");
			});
	}

	@Test
	void disabledLeaderKeepsTheApiAndRunsAloneWithNoTable() {
		this.contextRunner.withBean(Jobs.class).withPropertyValues("leader.enabled=false").run((context) -> {
			assertThat(context).hasNotFailed().hasSingleBean(Leadership.class).hasSingleBean(LEADER_ONLY_ADVISOR);
			assertThat(context.getBean(CoordinationStore.class)).isNotInstanceOf(PostgresCoordinationStore.class);
			Leadership leadership = context.getBean(Leadership.class);
			assertThat(leadership.awaitLeadership("jobs", WAIT)).isTrue();
			Jobs jobs = context.getBean(Jobs.class);
			jobs.run();
			assertThat(jobs.runs()).isEqualTo(1);
			assertThat(jobs.token()).isEqualTo(new FencingToken("jobs", 1));
			assertThat(this.schema.tables()).isEmpty();
		});
	}

	@Test
	void migrateFalseCreatesNoTables() {
		this.contextRunner.withPropertyValues("leader.jdbc.migrate=false").run((context) -> {
			assertThat(context).hasSingleBean(Leadership.class).doesNotHaveBean(LeaderSchemaMigration.class);
			assertThat(this.schema.tables()).isEmpty();
		});
	}

	@Test
	void renewIntervalOfHalfTheLeaseDurationFailsStartupBeforeAnythingIsCreated() {
		this.contextRunner.withPropertyValues("leader.lease.renew-interval=6s").run((context) -> {
			assertThatRootCause(context).hasMessageContaining(
					"leader.lease.renew-interval (PT6S) must be less than half of leader.lease.duration (PT10S)");
			assertThat(this.schema.tables()).isEmpty();
		});
	}

	@Test
	void nodeExpiryBelowTwiceTheRenewIntervalFailsStartup() {
		this.contextRunner.withPropertyValues("leader.node.expiry=5s")
			.run((context) -> assertThatRootCause(context).hasMessageContaining(
					"leader.node.expiry (PT5S) must be at least twice leader.lease.renew-interval (PT3S)"));
	}

	@Test
	void zeroQueryTimeoutFailsStartupBeforeAnythingIsCreated() {
		this.contextRunner.withPropertyValues("leader.jdbc.query-timeout=0s").run((context) -> {
			assertThatRootCause(context).hasMessageContaining("leader.jdbc.query-timeout must be positive, was PT0S");
			assertThat(this.schema.tables()).isEmpty();
		});
	}

	@Test
	void negativeSafetyMarginFailsStartup() {
		this.contextRunner.withPropertyValues("leader.lease.safety-margin=-1ms")
			.run((context) -> assertThatRootCause(context)
				.hasMessageContaining("leader.lease.safety-margin must not be negative, was PT-0.001S"));
	}

	@Test
	void hostileTablePrefixIsRejectedBeforeAnythingIsCreated() throws SQLException {
		try (Connection connection = this.schema.database().connect();
				Statement statement = connection.createStatement()) {
			statement.execute("CREATE TABLE y (id INT)");
		}
		this.contextRunner.withPropertyValues("leader.jdbc.table-prefix=x; drop table y").run((context) -> {
			assertThatRootCause(context).hasMessageContaining("Invalid leader.jdbc.table-prefix 'x; drop table y'");
			assertThat(this.schema.tables()).containsExactly("y");
		});
	}

	@Test
	void upperCaseTablePrefixIsRejectedBeforeAnythingIsCreated() {
		this.contextRunner.withPropertyValues("leader.jdbc.table-prefix=Leader_").run((context) -> {
			assertThatRootCause(context).hasMessageContaining("Invalid leader.jdbc.table-prefix 'Leader_'");
			assertThat(this.schema.tables()).isEmpty();
		});
	}

	@Test
	void databaseWithoutAStoreFamilyFailsStartupSayingWhatToChange() {
		this.schema.runnerWithoutStoreFamilies()
			.withPropertyValues("leader.node.id=test-node")
			.run((context) -> assertThatRootCause(context)
				.hasMessageContaining("which leads to PostgreSQL, but no store family for PostgreSQL is configured")
				.hasMessageContaining("JdbcStoreFamily"));
	}

	@Test
	void databaseWithoutAStoreFamilyFailsStartupWhenTheStoresAreBuiltWithoutMigration() {
		this.schema.runnerWithoutStoreFamilies()
			.withPropertyValues("leader.node.id=test-node", "leader.jdbc.migrate=false")
			.run((context) -> assertThatRootCause(context)
				.hasMessageContaining("no store family for PostgreSQL is configured"));
	}

	@Test
	void postgresStoreFamilyBuildsEveryStoreOnPostgres() {
		this.contextRunner.run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean("leaderPostgresStoreFamily")).isInstanceOf(PostgresStoreFamily.class);
			assertThat(context.getBean(CoordinationStore.class)).isInstanceOf(PostgresCoordinationStore.class);
			assertThat(context.getBean(DaemonStore.class)).isInstanceOf(PostgresDaemonStore.class);
			assertThat(context.getBean(LogStore.class)).isInstanceOf(PostgresLogStore.class);
			assertThat(context.getBean(FencingStore.class)).isInstanceOf(PostgresFencingStore.class);
		});
	}

	private static LeaseSettings customLeaseSettings() {
		return new LeaseSettings(Duration.ofSeconds(30), Duration.ofSeconds(5), Duration.ofSeconds(1),
				Duration.ofMillis(500), Duration.ofSeconds(20), Duration.ofSeconds(5));
	}

	private static AbstractThrowableAssert<?, ?> assertThatRootCause(AssertableApplicationContext context) {
		return assertThat(context).hasFailed().getFailure().rootCause();
	}

	private void leaseHeldByAnotherNode(String group) throws SQLException {
		new LeaderSchemaMigration(this.schema.database().unpooled(), new TablePrefix("leader_")).migrate();
		try (Connection connection = this.schema.database().connect();
				PreparedStatement statement = connection.prepareStatement("""
						INSERT INTO leader_leases (group_name, holder, term, acquired_at, renewed_at, expires_at)
						VALUES (?, 'other-node', 4, clock_timestamp(), clock_timestamp(),
						        clock_timestamp() + interval '1 hour')
						""")) {
			statement.setString(1, group);
			statement.executeUpdate();
		}
	}

	/**
	 * Proxied, so the tests read its state through methods rather than fields of the
	 * proxy.
	 */
	public static class Jobs {

		private final AtomicInteger runs = new AtomicInteger();

		private final AtomicBoolean waiting = new AtomicBoolean();

		private volatile @Nullable FencingToken token;

		int runs() {
			return this.runs.get();
		}

		boolean waiting() {
			return this.waiting.get();
		}

		@Nullable FencingToken token() {
			return this.token;
		}

		@LeaderOnly(group = "jobs")
		public void run() {
			this.runs.incrementAndGet();
			this.token = FencingToken.current();
		}

		@LeaderOnly(group = "jobs")
		public Optional<String> report() {
			return Optional.of("report");
		}

		// Waits for at most the timeout, and answers whether an interrupt ended the wait.
		@LeaderOnly(group = "jobs")
		public boolean waitUntilInterrupted(Duration timeout) {
			this.waiting.set(true);
			try {
				Thread.sleep(timeout.toMillis());
				return false;
			}
			catch (InterruptedException ex) {
				return true;
			}
		}

		@LeaderOnly(group = "jobs")
		public String total() {
			return "total";
		}

	}

	public static class InvalidGroupJob {

		@LeaderOnly(group = "not a group")
		public void run() {
		}

	}

	/**
	 * A store that never grants a lease and counts the engine's round trips.
	 */
	static class RecordingCoordinationStore implements CoordinationStore {

		final AtomicInteger ticks = new AtomicInteger();

		@Override
		public AcquireResult acquire(String group, NodeRegistration node, Duration duration) {
			return new AcquireResult(false, null);
		}

		@Override
		public Tick tick(NodeRegistration node, Map<String, Long> held, Collection<String> groups,
				Duration leaseDuration, Duration nodeExpiry) {
			this.ticks.incrementAndGet();
			return new Tick(Map.of(), Map.of(), List.of());
		}

		@Override
		public Collection<String> release(String nodeId, Map<String, Long> held) {
			return List.of();
		}

		@Override
		public void deregister(NodeRegistration node) {
		}

		@Override
		public List<LeaseState> leases() {
			return List.of();
		}

	}

	/**
	 * Leads every group, always under term 7.
	 */
	static class FixedLeadership implements Leadership {

		@Override
		public String nodeId() {
			return "fixed";
		}

		@Override
		public Set<String> groups() {
			return Set.of("jobs");
		}

		@Override
		public boolean isLeader(String group) {
			return true;
		}

		@Override
		public Optional<FencingToken> token(String group) {
			return Optional.of(new FencingToken(group, 7));
		}

		@Override
		public Optional<LeaderInfo> leader(String group) {
			return Optional.empty();
		}

		@Override
		public boolean yield(String group) {
			return false;
		}

		@Override
		public boolean awaitLeadership(String group, Duration timeout) {
			return true;
		}

		@Override
		public Registration addListener(String group, LeadershipListener listener) {
			return () -> {
			};
		}

	}

	/**
	 * An application's own leadership that offers the status and enrolment views too, and
	 * records what the features enrol.
	 */
	static final class ViewedLeadership extends FixedLeadership implements LeaseStatus, Enrolment {

		final List<String> enrolledGroups = new CopyOnWriteArrayList<>();

		final List<String> advertisedDaemons = new CopyOnWriteArrayList<>();

		volatile @Nullable LeaseMonitor monitor;

		@Override
		public void addGroup(String group) {
			this.enrolledGroups.add(group);
		}

		@Override
		public void advertiseDaemons(Set<String> daemons) {
			this.advertisedDaemons.addAll(daemons);
		}

		@Override
		public void advertiseAddress(@Nullable String baseUrl, @Nullable String zone) {
		}

		@Override
		public void setMonitor(LeaseMonitor monitor) {
			this.monitor = monitor;
		}

		@Override
		public void onSessionLost(Runnable action) {
		}

		@Override
		public Optional<LeaseState> lease(String group) {
			return Optional.empty();
		}

		@Override
		public Optional<Duration> safeWindowRemaining(String group) {
			return Optional.empty();
		}

		@Override
		public Optional<Duration> sinceLastHeartbeat() {
			return Optional.empty();
		}

		@Override
		public long sessionsLost() {
			return 0;
		}

		@Override
		public boolean sessionLostSince(long nanoTime) {
			return false;
		}

		@Override
		public List<NodeInfo> members() {
			return List.of();
		}

		@Override
		public LeaseSettings settings() {
			return LeaseSettings.defaults();
		}

		@Override
		public long databaseClockSteps() {
			return 0;
		}

	}

}
