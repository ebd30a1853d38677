package dev.leader.autoconfigure;

import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import dev.leader.DaemonAgent;
import dev.leader.FencingToken;
import dev.leader.LeaderOnly;
import dev.leader.Leadership;
import dev.leader.alone.LeaderMode;
import dev.leader.daemon.DaemonStore;
import dev.leader.etcd.EtcdCoordinationStore;
import dev.leader.etcd.EtcdDaemonStore;
import dev.leader.etcd.EtcdLogStore;
import dev.leader.etcd.EtcdStoresAutoConfiguration;
import dev.leader.fencing.Fencing;
import dev.leader.fencing.FencingStore;
import dev.leader.fencing.FencingStore.Fence;
import dev.leader.jdbc.FencesOnlyFencingStore;
import dev.leader.jdbc.JdbcStoresAutoConfiguration;
import dev.leader.lease.CoordinationStore;
import dev.leader.log.Bookmark;
import dev.leader.log.DecisionLog;
import dev.leader.log.LogApplier;
import dev.leader.log.LogEntry;
import dev.leader.log.LogStore;
import dev.leader.log.RecordingApplier;
import dev.leader.mariadb.MariaDbStoresAutoConfiguration;
import dev.leader.postgres.PostgresStoresAutoConfiguration;
import dev.leader.test.EtcdCluster;
import io.etcd.jetcd.Client;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * The etcd store family chosen by {@code leader.etcd.endpoints}, against a real etcd
 * member started once for the class: without a {@code DataSource}, with one, whose fences
 * then take the etcd terms, and with one the starter has no tables for (H2), which costs
 * the fences only.
 */
@ExtendWith(OutputCaptureExtension.class)
class EtcdAutoConfigurationTests {

	private static final Duration WAIT = Duration.ofSeconds(15);

	private static EtcdCluster cluster;

	@RegisterExtension
	final SchemaContextRunners schema = new SchemaContextRunners();

	@BeforeAll
	static void startEtcd() {
		cluster = EtcdCluster.start(1);
	}

	@AfterAll
	static void stopEtcd() {
		try (EtcdCluster started = cluster) {
			cluster = null;
		}
	}

	private ApplicationContextRunner withoutDataSource() {
		return new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(EtcdStoresAutoConfiguration.class,
					PostgresStoresAutoConfiguration.class, MariaDbStoresAutoConfiguration.class,
					JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class))
			.withPropertyValues(etcd());
	}

	private ApplicationContextRunner withDataSource(String url) {
		return new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
				DataSourceTransactionManagerAutoConfiguration.class, TransactionAutoConfiguration.class,
				EtcdStoresAutoConfiguration.class, PostgresStoresAutoConfiguration.class,
				MariaDbStoresAutoConfiguration.class, JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class))
			.withPropertyValues("spring.datasource.url=" + url, "spring.datasource.username=sa",
					"spring.datasource.password=")
			.withPropertyValues(etcd());
	}

	private static String[] etcd() {
		return new String[] { "leader.etcd.endpoints=" + String.join(",", cluster.endpoints()),
				"leader.etcd.prefix=leader-test/" + UUID.randomUUID(), "leader.node.id=etcd-node",
				"leader.groups=billing" };
	}

	@Test
	void etcdEndpointsWithoutADataSourceGetTheEtcdStoresAndALeaderWhoseTermIsARevision() {
		withoutDataSource().run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(CoordinationStore.class)).isInstanceOf(EtcdCoordinationStore.class);
			assertThat(context).doesNotHaveBean(FencingStore.class);
			Leadership leadership = context.getBean(Leadership.class);
			assertThat(leadership.awaitLeadership("billing", WAIT)).isTrue();
			assertThat(leadership.token("billing"))
				.hasValueSatisfying((token) -> assertThat(token.term()).isPositive());
		});
	}

	@Test
	void etcdEndpointsWithAPostgresDataSourceCoordinateThroughEtcdAndFenceWithTheFencesTable() {
		this.schema.runner(EtcdStoresAutoConfiguration.class).withPropertyValues(etcd()).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(CoordinationStore.class)).isInstanceOf(EtcdCoordinationStore.class);
			assertThat(context.getBean(DaemonStore.class)).isInstanceOf(EtcdDaemonStore.class);
			FencingStore fencing = context.getBean(FencingStore.class);
			assertThat(fencing).isInstanceOf(FencesOnlyFencingStore.class);
			Leadership leadership = context.getBean(Leadership.class);
			assertThat(leadership.awaitLeadership("billing", WAIT)).isTrue();
			FencingToken token = leadership.token("billing").orElseThrow();
			TransactionTemplate transactions = new TransactionTemplate(
					new DataSourceTransactionManager(context.getBean(DataSource.class)));
			Fence advanced = transactions.execute((status) -> fencing.advance("ledger", token));
			assertThat(advanced).isEqualTo(new Fence(true, "billing", token.term()));
			Fence stale = transactions.execute((status) -> fencing.advance("ledger", new FencingToken("billing", 1)));
			assertThat(stale).isEqualTo(new Fence(false, "billing", token.term()));
			assertThatExceptionOfType(UnsupportedOperationException.class)
				.isThrownBy(() -> transactions.execute((status) -> fencing.lockLease(token, "etcd-node")))
				.withMessageContaining("Fencing.advance");
		});
	}

	@Test
	void decisionLogOnEtcdAppendsUnderTheLeadersTermAndItsNodeAppliesTheEntry() {
		RecordingApplier billing = new RecordingApplier("billing");
		withoutDataSource().withBean(LogApplier.class, () -> billing).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(LogStore.class)).isInstanceOf(EtcdLogStore.class);
			Leadership leadership = context.getBean(Leadership.class);
			assertThat(leadership.awaitLeadership("billing", WAIT)).isTrue();
			FencingToken token = leadership.token("billing").orElseThrow();
			Bookmark entry = context.getBean(DecisionLog.class).append(token, "charge", "EUR 1");
			assertThat(entry).isEqualTo(new Bookmark("billing", token.term(), 1));
			assertThat(context.getBean(DecisionLog.class).awaitApplied(entry, WAIT)).isTrue();
			assertThat(billing.entries()).extracting(LogEntry::payload).containsExactly("EUR 1");
		});
	}

	@Test
	void crashTakeoverGroupsFailStartupOnEtcdSayingWhy() {
		withoutDataSource().withPropertyValues("leader.lease.crash-takeover-groups=billing").run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context.getStartupFailure()).rootCause()
				.hasMessageContaining("leader.lease.crash-takeover-groups [billing] cannot be served by etcd");
		});
	}

	@Test
	void fencedLeaderOnlyCallWithoutADataSourceFailsSayingWhy() {
		withoutDataSource().withBean(Settlement.class).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(Leadership.class).awaitLeadership("billing", WAIT)).isTrue();
			assertThatExceptionOfType(IllegalStateException.class)
				.isThrownBy(() -> context.getBean(Settlement.class).settle())
				.withMessageContaining("@LeaderOnly(fenced = true)")
				.withMessageContaining("no DataSource");
		});
	}

	@Test
	void daemonAgentOnEtcdIsAssignedToTheOnlyNodeAndRunsWithItsGeneration() {
		BlockingQueue<Long> generations = new LinkedBlockingQueue<>();
		withoutDataSource().withBean("outbox", DaemonAgent.class, () -> (context) -> {
			generations.add(context.generation());
			context.awaitCancellation(WAIT);
		}).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(DaemonStore.class)).isInstanceOf(EtcdDaemonStore.class);
			// The first generation is the term of the daemons' group's leader.
			Long generation = generations.poll(WAIT.toMillis(), TimeUnit.MILLISECONDS);
			assertThat(context.getBean(Leadership.class).token("default"))
				.hasValueSatisfying((token) -> assertThat(generation).isEqualTo(token.term()));
		});
	}

	@Test
	void endpointThatIsNotAClientUrlFailsStartupNamingTheProperty() {
		withoutDataSource().withPropertyValues("leader.etcd.endpoints=etcd-1:2379").run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context.getStartupFailure()).rootCause()
				.hasMessageContaining("leader.etcd.endpoints")
				.hasMessageContaining("http://host:port");
		});
	}

	@Test
	void leaseDurationBetweenWholeSecondsFailsStartupSinceEtcdCountsSeconds() {
		withoutDataSource()
			.withPropertyValues("leader.lease.duration=2500ms", "leader.lease.renew-interval=1s",
					"leader.lease.retry-interval=500ms")
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(context.getStartupFailure()).rootCause()
					.hasMessageContaining("leader.lease.duration must be a whole number of seconds");
				FailureAnalysis analysis = new InvalidSettingsFailureAnalyzer().analyze(context.getStartupFailure());
				assertThat(analysis).isNotNull();
				assertThat(analysis.getDescription()).startsWith("Invalid leader election settings: "
						+ "leader.lease.duration must be a whole number of seconds");
			});
	}

	@Test
	void nodesOnEtcdWithInMemoryDataSourcesCoordinateThroughEtcdAndNeverRunAlone(CapturedOutput output) {
		String prefix = "leader.etcd.prefix=leader-test/" + UUID.randomUUID();
		withDataSource("jdbc:h2:mem:" + UUID.randomUUID()).withPropertyValues(prefix, "leader.node.id=node-1")
			.run((first) -> withDataSource("jdbc:h2:mem:" + UUID.randomUUID())
				.withPropertyValues(prefix, "leader.node.id=node-2")
				.run((second) -> {
					assertThat(first).hasNotFailed().doesNotHaveBean(LeaderMode.class);
					assertThat(second).hasNotFailed().doesNotHaveBean(LeaderMode.class);
					Leadership one = first.getBean(Leadership.class);
					Leadership two = second.getBean(Leadership.class);
					await().atMost(WAIT).until(() -> one.isLeader("billing") || two.isLeader("billing"));
					assertThat(one.isLeader("billing") && two.isLeader("billing")).isFalse();
					Leadership leader = one.isLeader("billing") ? one : two;
					Leadership follower = (leader == one) ? two : one;
					await().atMost(WAIT)
						.untilAsserted(() -> assertThat(follower.leader("billing"))
							.hasValueSatisfying((info) -> assertThat(info.nodeId()).isEqualTo(leader.nodeId())));
					assertThat(output).doesNotContain("single-node mode");
				}));
	}

	@Test
	void etcdEndpointsWithADataSourceTheStarterHasNoTablesForStartAndRefuseOnlyFencedWrites(CapturedOutput output,
			@TempDir Path directory) {
		String url = "jdbc:h2:file:" + directory.resolve("application");
		withDataSource(url).withBean(Settlement.class).run((context) -> {
			assertThat(context).hasNotFailed().doesNotHaveBean(LeaderMode.class);
			assertThat(context.getBean(CoordinationStore.class)).isInstanceOf(EtcdCoordinationStore.class);
			Leadership leadership = context.getBean(Leadership.class);
			assertThat(leadership.awaitLeadership("billing", WAIT)).isTrue();
			FencingToken token = leadership.token("billing").orElseThrow();
			assertThatExceptionOfType(UnsupportedOperationException.class)
				.isThrownBy(() -> context.getBean(Fencing.class).advance("ledger", token))
				.withMessageContaining("leads to H2")
				.withMessageContaining("the fences table needs PostgreSQL or MariaDB 10.11 or later");
			assertThatExceptionOfType(UnsupportedOperationException.class)
				.isThrownBy(() -> context.getBean(Settlement.class).settle())
				.withMessageContaining("leads to H2")
				.withMessageContaining("need PostgreSQL or MariaDB 10.11 or later");
			assertThat(JdbcClient.create(context.getBean(DataSource.class))
				.sql("SELECT COUNT(*) FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = 'PUBLIC'")
				.query(Long.class)
				.single()).isZero();
		});
		assertThat(output).contains("leads to H2")
			.contains("where the starter keeps no fences table: fenced writes to it need PostgreSQL or MariaDB")
			.doesNotContain("keeps its leases in the application's DataSource");
	}

	@Test
	void etcdTimeoutThatLeavesNoRoomForARetryInTheSafeWindowFailsStartupSayingWhatToSet() {
		withoutDataSource()
			.withPropertyValues("leader.lease.duration=4s", "leader.lease.renew-interval=1s",
					"leader.lease.retry-interval=1s", "leader.node.expiry=4s")
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(context.getStartupFailure()).rootCause()
					.hasMessageStartingWith("leader.etcd.timeout (PT3S) plus leader.lease.renew-interval (PT1S) plus "
							+ "leader.lease.retry-interval (PT1S) plus leader.lease.safety-margin (PT0.2S) must be "
							+ "less than leader.lease.duration (PT4S)")
					.hasMessageContaining("lower leader.etcd.timeout below PT1.8S, or raise leader.lease.duration "
							+ "and leader.node.expiry to at least PT6S");
				FailureAnalysis analysis = new InvalidSettingsFailureAnalyzer().analyze(context.getStartupFailure());
				assertThat(analysis).isNotNull();
				assertThat(analysis.getAction()).startsWith("Change leader.etcd.timeout, ");
			});
	}

	@Test
	void etcdTimeoutThatLeavesRoomForARetryInTheSafeWindowStarts() {
		withoutDataSource()
			.withPropertyValues("leader.lease.duration=4s", "leader.lease.renew-interval=1s",
					"leader.lease.retry-interval=1s", "leader.node.expiry=4s", "leader.etcd.timeout=1s")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context.getBean(Leadership.class).awaitLeadership("billing", WAIT)).isTrue();
			});
	}

	@Test
	void disabledStarterStartsNoEtcdClient() {
		withoutDataSource().withPropertyValues("leader.enabled=false").run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context).doesNotHaveBean(Client.class);
		});
	}

	@Test
	void unsetEndpointsLeaveTheDatabaseStores() {
		this.schema.runner(EtcdStoresAutoConfiguration.class).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context).doesNotHaveBean(Client.class);
			assertThat(context.getBean(FencingStore.class)).isNotInstanceOf(FencesOnlyFencingStore.class);
		});
	}

	/**
	 * Writes that must be fenced.
	 */
	public static class Settlement {

		@LeaderOnly(group = "billing", fenced = true)
		public void settle() {
		}

	}

}
