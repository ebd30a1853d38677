package dev.leader.autoconfigure;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import dev.leader.DaemonAgent;
import dev.leader.DaemonContext;
import dev.leader.FencingToken;
import dev.leader.LeaderInfo;
import dev.leader.LeaderOnly;
import dev.leader.Leadership;
import dev.leader.StaleLeadershipException;
import dev.leader.actuate.LeadershipEndpoint;
import dev.leader.actuate.LeadershipEndpoint.AssignmentDescriptor;
import dev.leader.actuate.LeadershipEndpoint.LeadershipDescriptor;
import dev.leader.alone.LeaderMode;
import dev.leader.fencing.Fencing;
import dev.leader.jdbc.JdbcStoresAutoConfiguration;
import dev.leader.log.Bookmark;
import dev.leader.log.DecisionLog;
import dev.leader.log.LogEntry;
import dev.leader.log.RecordingApplier;
import dev.leader.mariadb.MariaDbStoresAutoConfiguration;
import dev.leader.postgres.PostgresStoresAutoConfiguration;
import dev.leader.test.TestLeadership;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.jdbc.datasource.AbstractDataSource;
import org.springframework.jdbc.datasource.SimpleDriverDataSource;
import org.springframework.jdbc.datasource.embedded.EmbeddedDatabase;
import org.springframework.jdbc.datasource.embedded.EmbeddedDatabaseBuilder;
import org.springframework.jdbc.datasource.embedded.EmbeddedDatabaseType;
import org.springframework.transaction.IllegalTransactionStateException;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

/**
 * Single-node mode: a node whose DataSource is an in-memory H2 database, or that runs
 * with {@code leader.enabled=false}, runs alone, and the whole API works as on the leader
 * of a cluster, with no table and one warning.
 */
@ExtendWith(OutputCaptureExtension.class)
class SingleNodeModeTests {

	private static final Duration WAIT = Duration.ofSeconds(10);

	private static final String WARNING = "Leader election runs in single-node mode";

	@RegisterExtension
	final SchemaContextRunners schema = new SchemaContextRunners();

	private final ApplicationContextRunner h2 = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
				DataSourceTransactionManagerAutoConfiguration.class, TransactionAutoConfiguration.class,
				PostgresStoresAutoConfiguration.class, MariaDbStoresAutoConfiguration.class,
				JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class,
				LeaderEndpointAutoConfiguration.class))
		.withPropertyValues("spring.datasource.url=jdbc:h2:mem:" + UUID.randomUUID(), "leader.node.id=alone-node",
				"management.endpoints.web.exposure.include=leadership", "leader.lease.duration=2s",
				"leader.lease.renew-interval=200ms", "leader.lease.retry-interval=500ms",
				"leader.lease.safety-margin=100ms", "leader.node.expiry=2s")
		.withBean(Settlement.class);

	@Test
	void nodeOnAnInMemoryH2DatabaseRunsAloneLeadsEveryGroupWithNoTableAndWarnsOnce(CapturedOutput output) {
		this.h2.withPropertyValues("leader.groups=default,reports").run((context) -> {
			assertThat(context).hasNotFailed();
			LeaderMode mode = context.getBean(LeaderMode.class);
			assertThat(mode.isAlone()).isTrue();
			assertThat(mode.reason()).startsWith("the DataSource is an in-memory H2 database (jdbc:h2:mem:")
				.endsWith("which no other process can share");
			Leadership leadership = context.getBean(Leadership.class);
			assertThat(leadership.groups()).containsExactlyInAnyOrder("default", "reports", "billing");
			// Leading from the moment the context has started; the lease's details
			// (holder, expiry) come with the node's next read of its leases.
			for (String group : leadership.groups()) {
				assertThat(leadership.isLeader(group)).isTrue();
				assertThat(leadership.token(group)).contains(new FencingToken(group, 1));
				await().atMost(WAIT)
					.untilAsserted(
							() -> assertThat(leadership.leader(group)).map(LeaderInfo::nodeId).contains("alone-node"));
			}
			assertThat(JdbcClient.create(context.getBean(DataSource.class))
				.sql("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'PUBLIC'")
				.query(Long.class)
				.single()).isZero();
		});
		assertThat(output.getOut().lines().filter((line) -> line.contains(WARNING))).singleElement()
			.asString()
			.contains("WARN")
			.contains("(the DataSource is an in-memory H2 database (jdbc:h2:mem:")
			.contains("this node leads every group and runs every daemon");
	}

	@Test
	void applicationWithNoDatasourceUrlRunsAloneOnTheEmbeddedDatabaseSpringBootStartsForIt() throws Exception {
		try (ConfigurableApplicationContext context = new SpringApplicationBuilder(TestedApplication.class)
			.web(WebApplicationType.NONE)
			.run("--leader.node.id=test-node")) {
			assertThat(context.getBean(LeaderMode.class).reason())
				.startsWith("the DataSource is an in-memory H2 database");
			Settlement settlement = context.getBean(Settlement.class);
			settlement.run();
			assertThat(settlement.runs()).isOne();
			assertThat(settlement.settle()).contains(new FencingToken("billing", 1));
		}
	}

	@Test
	void leaderOnlyCallsRunAndFencedCallsPassOnANodeAlone() {
		this.h2.run((context) -> {
			Settlement settlement = context.getBean(Settlement.class);
			settlement.run();
			assertThat(settlement.runs()).isEqualTo(1);
			assertThat(settlement.token()).isEqualTo(new FencingToken("billing", 1));
			assertThat(settlement.settle()).contains(new FencingToken("billing", 1));
			// The fence is real: as on a database, it needs the write's transaction.
			assertThatExceptionOfType(IllegalTransactionStateException.class)
				.isThrownBy(settlement::settleWithoutTransaction);
		});
	}

	@Test
	void daemonAgentRunsOnANodeAlone() {
		this.h2.withBean("ledger-sync", CountingAgent.class).run((context) -> {
			CountingAgent agent = context.getBean(CountingAgent.class);
			await().atMost(WAIT).until(() -> agent.runs() > 0);
			// The endpoint shows the assignments as the node last read them.
			await().atMost(WAIT)
				.untilAsserted(() -> assertThat(context.getBean(LeadershipEndpoint.class).leadership().assignments())
					.extracting(AssignmentDescriptor::daemon, AssignmentDescriptor::node, AssignmentDescriptor::state)
					.containsExactly(tuple("ledger-sync", "alone-node", "ACTIVE")));
		});
	}

	@Test
	void decisionLogAppendsInTheTransactionAndAppliesOnANodeAlone() {
		this.h2.withPropertyValues("leader.groups=rates")
			.withBean(RecordingApplier.class, () -> new RecordingApplier("rates"))
			.run((context) -> {
				Leadership leadership = context.getBean(Leadership.class);
				assertThat(leadership.awaitLeadership("rates", WAIT)).isTrue();
				FencingToken token = leadership.token("rates").orElseThrow();
				DecisionLog log = context.getBean(DecisionLog.class);
				TransactionTemplate transactions = context.getBean(TransactionTemplate.class);
				transactions.executeWithoutResult((status) -> {
					log.append(token, "rate", "rolled back");
					status.setRollbackOnly();
				});
				Bookmark bookmark = transactions.execute((status) -> log.append(token, "rate", "EUR 1.0845"));
				assertThat(bookmark).isEqualTo(new Bookmark("rates", token.term(), 1));
				assertThat(log.awaitApplied(bookmark, WAIT)).isTrue();
				assertThat(context.getBean(RecordingApplier.class).entries()).extracting(LogEntry::payload)
					.containsExactly("EUR 1.0845");
			});
	}

	@Test
	void restartWithinTheContextLeadsAgainUnderAHigherTerm() {
		this.h2.run((context) -> {
			Leadership leadership = context.getBean(Leadership.class);
			assertThat(leadership.awaitLeadership("billing", WAIT)).isTrue();
			context.getSourceApplicationContext().stop();
			assertThat(leadership.isLeader("billing")).isFalse();
			context.getSourceApplicationContext().start();
			assertThat(leadership.isLeader("billing")).isTrue();
			assertThat(leadership.token("billing")).contains(new FencingToken("billing", 2));
		});
	}

	@Test
	void disabledLeaderOnPostgresRunsAloneWithNoTableAndWarnsOnce(CapturedOutput output) {
		this.schema.runner(DataSourceTransactionManagerAutoConfiguration.class, TransactionAutoConfiguration.class)
			.withPropertyValues("leader.enabled=false", "leader.node.id=disabled-node")
			.withBean(Settlement.class)
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context.getBean(LeaderMode.class).reason()).isEqualTo("leader.enabled=false");
				Settlement settlement = context.getBean(Settlement.class);
				settlement.run();
				assertThat(settlement.runs()).isEqualTo(1);
				assertThat(settlement.token()).isEqualTo(new FencingToken("billing", 1));
				assertThat(settlement.settle()).contains(new FencingToken("billing", 1));
				assertThat(this.schema.tables()).isEmpty();
			});
		assertThat(output.getOut().lines().filter((line) -> line.contains(WARNING))).singleElement()
			.asString()
			.contains("WARN")
			.contains("(leader.enabled=false)");
	}

	@Test
	void endpointShowsTheModeAndWhyTheNodeRunsAlone() {
		this.h2.run((context) -> {
			LeadershipDescriptor descriptor = context.getBean(LeadershipEndpoint.class).leadership();
			assertThat(descriptor.mode()).isEqualTo("alone");
			assertThat(descriptor.modeReason()).startsWith("the DataSource is an in-memory H2 database");
		});
		this.schema.runner(LeaderEndpointAutoConfiguration.class)
			.withPropertyValues("leader.node.id=cluster-node", "management.endpoints.web.exposure.include=leadership")
			.run((context) -> {
				LeadershipDescriptor descriptor = context.getBean(LeadershipEndpoint.class).leadership();
				assertThat(descriptor.mode()).isEqualTo("cluster");
				assertThat(descriptor.modeReason()).isNull();
			});
	}

	@Test
	void serverDatabaseIsToldFromItsUrlWithoutWaitingForAConnection() {
		AtomicInteger connections = new AtomicInteger();
		DataSource down = new AbstractDataSource() {

			@Override
			public Connection getConnection() throws SQLException {
				connections.incrementAndGet();
				throw new SQLException("The database is down");
			}

			@Override
			public Connection getConnection(String username, String password) throws SQLException {
				return getConnection();
			}

		};
		assertThat(LeaderMode.decide(true, down, "jdbc:postgresql://127.0.0.1:1/down", WAIT).isAlone()).isFalse();
		assertThat(connections).hasValue(0);
	}

	@Test
	void inMemoryH2ServedOverTcpIsNotAloneSinceOtherProcessesCanConnect() throws SQLException {
		String name = "shared" + UUID.randomUUID().toString().replace("-", "");
		org.h2.tools.Server server = org.h2.tools.Server.createTcpServer("-tcpPort", "0", "-ifNotExists").start();
		try {
			String owner = "jdbc:h2:mem:" + name + ";DB_CLOSE_DELAY=-1";
			DataSource local = new SimpleDriverDataSource(new org.h2.Driver(), owner, "sa", "");
			try (Connection keep = local.getConnection()) {
				String remote = "jdbc:h2:tcp://127.0.0.1:" + server.getPort() + "/mem:" + name;
				DataSource overTcp = new SimpleDriverDataSource(new org.h2.Driver(), remote, "sa", "");
				assertThat(LeaderMode.decide(true, overTcp, remote, WAIT).isAlone()).isFalse();
				assertThat(LeaderMode.decide(true, overTcp, null, WAIT).isAlone()).isFalse();
			}
		}
		finally {
			server.stop();
		}
	}

	@Test
	void testDatabaseThatReplacesTheConfiguredServerRunsAlone() {
		EmbeddedDatabase replacement = new EmbeddedDatabaseBuilder().setType(EmbeddedDatabaseType.H2)
			.generateUniqueName(true)
			.build();
		try {
			this.h2.withPropertyValues("spring.datasource.url=jdbc:postgresql://db.example.invalid:5432/shop")
				.withBean(DataSource.class, () -> replacement)
				.run((context) -> {
					assertThat(context).hasNotFailed();
					assertThat(context.getBean(LeaderMode.class).isAlone()).isTrue();
				});
		}
		finally {
			replacement.shutdown();
		}
	}

	@Test
	void h2DatabaseInAFileIsNotAloneSinceOtherProcessesCanOpenIt(@TempDir Path directory) {
		String url = "jdbc:h2:file:" + directory.resolve("shared") + ";AUTO_SERVER=TRUE";
		DataSource file = new SimpleDriverDataSource(new org.h2.Driver(), url, "sa", "");
		assertThat(LeaderMode.decide(true, file, url, WAIT).isAlone()).isFalse();
		assertThat(LeaderMode.decide(true, file, null, WAIT).isAlone()).isFalse();
	}

	@Test
	void testLeadershipTakesAGroupAwaySoLeaderOnlyCallsAreSkippedAndGivesItBack() {
		this.h2.run((context) -> {
			Leadership leadership = context.getBean(Leadership.class);
			Settlement settlement = context.getBean(Settlement.class);
			assertThat(leadership.awaitLeadership("billing", WAIT)).isTrue();
			FencingToken held = leadership.token("billing").orElseThrow();
			TestLeadership testLeadership = TestLeadership.of(context);

			testLeadership.revoke("billing");
			assertThat(leadership.isLeader("billing")).isFalse();
			assertThat(leadership.leader("billing")).map(LeaderInfo::nodeId).contains(TestLeadership.OTHER_NODE);
			settlement.run();
			assertThat(settlement.runs()).isZero();
			assertThat(settlement.settle()).isEmpty();
			Fencing fencing = context.getBean(Fencing.class);
			assertThatExceptionOfType(StaleLeadershipException.class)
				.isThrownBy(() -> context.getBean(TransactionTemplate.class)
					.executeWithoutResult((status) -> fencing.guard(held)));

			testLeadership.grant("billing");
			assertThat(leadership.isLeader("billing")).isTrue();
			settlement.run();
			assertThat(settlement.runs()).isEqualTo(1);
			assertThat(settlement.token().term()).isGreaterThan(held.term());
			assertThat(settlement.settle()).contains(settlement.token());
		});
	}

	@Test
	void testLeadershipRefusesANodeThatCoordinatesThroughItsDatabase() {
		this.schema.runner().withPropertyValues("leader.node.id=cluster-node").run((context) -> {
			assertThat(context).hasNotFailed();
			assertThatExceptionOfType(IllegalStateException.class).isThrownBy(() -> TestLeadership.of(context))
				.withMessageContaining("needs a node that runs alone");
		});
	}

	@Configuration(proxyBeanMethods = false)
	@EnableAutoConfiguration
	@Import(Settlement.class)
	static class TestedApplication {

	}

	/**
	 * A job written as the README shows it.
	 */
	public static class Settlement {

		private final AtomicInteger runs = new AtomicInteger();

		private volatile @Nullable FencingToken token;

		int runs() {
			return this.runs.get();
		}

		FencingToken token() {
			FencingToken token = this.token;
			assertThat(token).isNotNull();
			return token;
		}

		@LeaderOnly(group = "billing")
		public void run() {
			this.runs.incrementAndGet();
			this.token = FencingToken.current();
		}

		@LeaderOnly(group = "billing", fenced = true)
		@Transactional
		public Optional<FencingToken> settle() {
			return Optional.of(FencingToken.current());
		}

		@LeaderOnly(group = "billing", fenced = true)
		public void settleWithoutTransaction() {
		}

	}

	/**
	 * A daemon that counts its runs and runs until cancelled.
	 */
	static class CountingAgent implements DaemonAgent {

		private final AtomicInteger runs = new AtomicInteger();

		int runs() {
			return this.runs.get();
		}

		@Override
		public void run(DaemonContext context) throws InterruptedException {
			this.runs.incrementAndGet();
			context.awaitCancellation(Duration.ofDays(1));
		}

	}

}
