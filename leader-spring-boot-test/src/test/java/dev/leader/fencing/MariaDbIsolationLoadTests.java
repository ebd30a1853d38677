package dev.leader.fencing;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.DaemonAgent;
import dev.leader.DaemonContext;
import dev.leader.DaemonStoppedEvent;
import dev.leader.FencingToken;
import dev.leader.LeaderChangedEvent;
import dev.leader.Leadership;
import dev.leader.LeadershipRevokedEvent;
import dev.leader.autoconfigure.LeaderAutoConfiguration;
import dev.leader.jdbc.JdbcStoresAutoConfiguration;
import dev.leader.log.Bookmark;
import dev.leader.log.DecisionLog;
import dev.leader.log.LogApplier;
import dev.leader.log.LogEntry;
import dev.leader.mariadb.MariaDbStoresAutoConfiguration;
import dev.leader.postgres.PostgresStoresAutoConfiguration;
import dev.leader.test.MariaDbTestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.ApplicationEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.PayloadApplicationEvent;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * An application's guarded load on MariaDB, with its pool at each isolation level an
 * application can set and with auto-commit on and off: two nodes, and on the leader three
 * threads whose transactions guard the lease of {@code a}, of {@code a} then {@code b},
 * of {@code b} then {@code a}, and append to the first group's decision log, and a daemon
 * whose transactions guard its assignment, back to back, each with 100 to 200 ms of work,
 * while the heartbeat renews both leases every 300 ms, for a lease of 2 s. The leader
 * must keep its term and its daemon, one node must lead throughout, and every transaction
 * must commit. At {@code SERIALIZABLE} the guards' reads of the lease and assignment rows
 * held the renewal and the acknowledgement up, and the leader lost its lease.
 * {@code -Disolation.load.duration=PT2M} runs each combination for two minutes instead of
 * a few seconds.
 */
class MariaDbIsolationLoadTests {

	private static final Duration RUN = Duration.parse(System.getProperty("isolation.load.duration", "PT4S"));

	/**
	 * What each transaction reads first, so that a {@code REPEATABLE READ} transaction
	 * has its snapshot before the guard. Not the ledger: two {@code SERIALIZABLE}
	 * transactions that both read the ledger and then insert into it deadlock on their
	 * own, guards or not.
	 */
	private static final String READ = "SELECT name FROM settings WHERE name = 'rate'";

	private static MariaDbTestDatabase database;

	private final List<ConfigurableApplicationContext> nodes = new ArrayList<>();

	@BeforeAll
	static void createDatabase() {
		database = MariaDbTestDatabase.create();
		try (HikariDataSource dataSource = database.dataSource(1)) {
			JdbcClient jdbc = JdbcClient.create(dataSource);
			jdbc.sql("CREATE TABLE ledger (kind VARCHAR(10) NOT NULL, term BIGINT NOT NULL)").update();
			jdbc.sql("CREATE TABLE settings (name VARCHAR(10) NOT NULL PRIMARY KEY)").update();
			jdbc.sql("INSERT INTO settings VALUES ('rate')").update();
		}
	}

	@AfterAll
	static void dropDatabase() {
		if (database != null) {
			database.drop();
		}
	}

	@AfterEach
	void stopNodes() {
		this.nodes.forEach(ConfigurableApplicationContext::close);
	}

	static List<Arguments> poolSettings() {
		List<Arguments> settings = new ArrayList<>();
		for (String isolation : List.of("TRANSACTION_READ_UNCOMMITTED", "TRANSACTION_READ_COMMITTED",
				"TRANSACTION_REPEATABLE_READ", "TRANSACTION_SERIALIZABLE")) {
			settings.add(Arguments.of(isolation, true));
			settings.add(Arguments.of(isolation, false));
		}
		return settings;
	}

	@ParameterizedTest(name = "{0}, auto-commit {1}")
	@MethodSource("poolSettings")
	void leaderKeepsItsTermAndDaemonAndEveryGuardedTransactionCommits(String isolation, boolean autoCommit)
			throws Exception {
		try (HikariDataSource dataSource = database.dataSource(1)) {
			JdbcClient.create(dataSource).sql("DELETE FROM ledger").update();
		}
		ConfigurableApplicationContext leader = start("node-1", isolation, autoCommit, true);
		Leadership leadership = leader.getBean(Leadership.class);
		await().atMost(Duration.ofSeconds(15)).until(() -> leadership.isLeader("a"));
		ConfigurableApplicationContext follower = start("node-2", isolation, autoCommit, false);
		GuardedDaemon daemon = leader.getBean(GuardedDaemon.class);
		assertThat(daemon.started.await(15, TimeUnit.SECONDS)).as("the daemon started on the leader").isTrue();
		await().atMost(Duration.ofSeconds(15)).until(() -> leadership.isLeader("b"));
		Map<String, FencingToken> tokens = Map.of("a", leadership.token("a").orElseThrow(), "b",
				leadership.token("b").orElseThrow());
		Fencing fencing = leader.getBean(Fencing.class);
		DecisionLog log = leader.getBean(DecisionLog.class);
		TransactionTemplate transactions = leader.getBean(TransactionTemplate.class);
		JdbcClient jdbc = JdbcClient.create(leader.getBean(javax.sql.DataSource.class));
		List<List<String>> orders = List.of(List.of("a"), List.of("a", "b"), List.of("b", "a"));
		AtomicLong committed = new AtomicLong();
		List<Throwable> failures = new CopyOnWriteArrayList<>();
		long end = System.nanoTime() + RUN.toNanos();
		daemon.runUntil(end);
		ExecutorService threads = Executors.newFixedThreadPool(orders.size());
		List<Future<?>> writers = new ArrayList<>();
		for (List<String> order : orders) {
			writers.add(threads.submit(() -> {
				while (System.nanoTime() < end && failures.size() < 10) {
					try {
						transactions.executeWithoutResult((status) -> {
							jdbc.sql(READ).query(String.class).single();
							FencingToken first = tokens.get(order.get(0));
							fencing.guard(first);
							work();
							for (String group : order.subList(1, order.size())) {
								fencing.guard(tokens.get(group));
							}
							Bookmark entry = log.append(first, "load", "x");
							work();
							jdbc.sql("INSERT INTO ledger VALUES ('lease', ?)").param(entry.term()).update();
						});
						committed.incrementAndGet();
					}
					catch (RuntimeException ex) {
						failures.add(ex);
					}
				}
			}));
		}
		for (Future<?> writer : writers) {
			writer.get(RUN.toSeconds() + 30, TimeUnit.SECONDS);
		}
		threads.shutdownNow();
		await().atMost(Duration.ofSeconds(10)).until(() -> daemon.finished.getCount() == 0);
		assertThat(failures).isEmpty();
		assertThat(daemon.failures).isEmpty();
		assertThat(leader.getBean(Events.class).revoked).isEmpty();
		assertThat(leader.getBean(Events.class).stopped).isEmpty();
		assertThat(follower.getBean(Events.class).changes)
			.allSatisfy((event) -> assertThat(event.leaderNodeId()).isEqualTo("node-1"));
		assertThat(leadership.token("a")).contains(tokens.get("a"));
		assertThat(leadership.token("b")).contains(tokens.get("b"));
		assertThat(committed.get()).as("lease-guarded transactions").isPositive();
		assertThat(daemon.committed.get()).as("daemon-guarded transactions").isPositive();
		assertThat(jdbc.sql("SELECT count(*) FROM ledger").query(Long.class).single())
			.isEqualTo(committed.get() + daemon.committed.get());
		System.out.printf(
				"%s, auto-commit %s, %s: %d lease-guarded and appending transactions, "
						+ "%d daemon-guarded, 0 failed, term %d kept%n",
				isolation, autoCommit, RUN, committed.get(), daemon.committed.get(), tokens.get("a").term());
	}

	// The work of a guarded transaction between its statements, as in
	// GuardedWriteLoadTests: the transactions overlap each other and the heartbeats.
	static void work() {
		try {
			Thread.sleep(100);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

	private ConfigurableApplicationContext start(String nodeId, String isolation, boolean autoCommit, boolean daemon) {
		ConfigurableApplicationContext context = new SpringApplicationBuilder(LoadApplication.class)
			.web(WebApplicationType.NONE)
			.run("--spring.datasource.url=" + database.url(), "--spring.datasource.username=" + database.user(),
					"--spring.datasource.password=" + database.password(),
					"--spring.datasource.hikari.transaction-isolation=" + isolation,
					"--spring.datasource.hikari.auto-commit=" + autoCommit, "--leader.node.id=" + nodeId,
					"--leader.groups=a,b", "--leader.daemons.group=a", "--leader.lease.duration=2s",
					"--leader.lease.renew-interval=300ms", "--leader.lease.retry-interval=300ms",
					"--leader.lease.safety-margin=100ms", "--leader.node.expiry=2s",
					"--leader.daemons.settle-window=0s", "--leader.daemons.ack-timeout=2s",
					"--leader.daemons.drain-timeout=2s", "--test.daemon=" + daemon);
		this.nodes.add(context);
		return context;
	}

	@Configuration(proxyBeanMethods = false)
	@ImportAutoConfiguration({ DataSourceAutoConfiguration.class, DataSourceTransactionManagerAutoConfiguration.class,
			TransactionAutoConfiguration.class, PostgresStoresAutoConfiguration.class,
			MariaDbStoresAutoConfiguration.class, JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class })
	static class LoadApplication {

		@Bean
		Events events() {
			return new Events();
		}

		@Bean
		LogApplier applier() {
			return new LogApplier() {

				@Override
				public String group() {
					return "a";
				}

				@Override
				public void apply(LogEntry entry) {
				}

			};
		}

		@Bean
		@ConditionalOnBooleanProperty("test.daemon")
		GuardedDaemon outbox(TransactionTemplate transactions, javax.sql.DataSource dataSource) {
			return new GuardedDaemon(transactions, JdbcClient.create(dataSource));
		}

	}

	/**
	 * A daemon that, once told to, runs guarded transactions back to back until a given
	 * instant.
	 */
	static final class GuardedDaemon implements DaemonAgent {

		final CountDownLatch started = new CountDownLatch(1);

		final CountDownLatch finished = new CountDownLatch(1);

		final AtomicLong committed = new AtomicLong();

		final List<Throwable> failures = new CopyOnWriteArrayList<>();

		private final TransactionTemplate transactions;

		private final JdbcClient jdbc;

		private volatile long end;

		private volatile boolean told;

		GuardedDaemon(TransactionTemplate transactions, JdbcClient jdbc) {
			this.transactions = transactions;
			this.jdbc = jdbc;
		}

		void runUntil(long end) {
			this.end = end;
			this.told = true;
		}

		@Override
		public void run(DaemonContext context) throws InterruptedException {
			this.started.countDown();
			while (!this.told && !context.awaitCancellation(Duration.ofMillis(10))) {
				// waits for the test
			}
			while (!context.isCancelled() && System.nanoTime() < this.end && this.failures.size() < 10) {
				try {
					this.transactions.executeWithoutResult((status) -> {
						this.jdbc.sql(READ).query(String.class).single();
						context.guard();
						work();
						this.jdbc.sql("INSERT INTO ledger VALUES ('daemon', ?)").param(context.generation()).update();
					});
					this.committed.incrementAndGet();
				}
				catch (RuntimeException ex) {
					this.failures.add(ex);
				}
			}
			this.finished.countDown();
			context.awaitCancellation(Duration.ofMinutes(10));
		}

	}

	/**
	 * The revokes and daemon stops this node saw of its own, and the leader changes it
	 * saw.
	 */
	static class Events implements ApplicationListener<ApplicationEvent> {

		final List<LeadershipRevokedEvent> revoked = new CopyOnWriteArrayList<>();

		final List<DaemonStoppedEvent> stopped = new CopyOnWriteArrayList<>();

		final List<LeaderChangedEvent> changes = new CopyOnWriteArrayList<>();

		@Override
		public void onApplicationEvent(ApplicationEvent event) {
			if (event instanceof PayloadApplicationEvent<?> payload) {
				if (payload.getPayload() instanceof LeadershipRevokedEvent revokedEvent) {
					this.revoked.add(revokedEvent);
				}
				else if (payload.getPayload() instanceof DaemonStoppedEvent stoppedEvent) {
					this.stopped.add(stoppedEvent);
				}
				else if (payload.getPayload() instanceof LeaderChangedEvent changed) {
					this.changes.add(changed);
				}
			}
		}

	}

}
