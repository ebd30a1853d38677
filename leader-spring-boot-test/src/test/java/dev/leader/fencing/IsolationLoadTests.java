package dev.leader.fencing;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import java.util.stream.Stream;

import javax.sql.DataSource;

import dev.leader.DaemonAgent;
import dev.leader.FencingToken;
import dev.leader.LeaderOnly;
import dev.leader.Leadership;
import dev.leader.autoconfigure.LeaderAutoConfiguration;
import dev.leader.jdbc.JdbcStoresAutoConfiguration;
import dev.leader.log.DecisionLog;
import dev.leader.mariadb.MariaDbStoresAutoConfiguration;
import dev.leader.postgres.PostgresStoresAutoConfiguration;
import dev.leader.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.dao.ConcurrencyFailureException;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The guards and the starter's own transactions at every isolation level an application's
 * pool can set, with auto-commit on and off: a leader and a follower whose HikariCP pool
 * runs each of {@code READ COMMITTED}, {@code REPEATABLE READ} and {@code SERIALIZABLE},
 * with {@code auto-commit} {@code true} and {@code false}. On the leader, guarded
 * transactions run back to back while its heartbeat renews every 300 ms: two threads with
 * the lease guard ({@link Fencing#guard}), one through
 * {@code @LeaderOnly(fenced = true)}, a daemon agent with the daemon guard
 * ({@link dev.leader.DaemonContext#guard}), and two threads that update a row and append
 * to the decision log in one transaction, as the guide's example does
 * (docs/decision-log.md). The leader keeps its term, the follower never sees another
 * leader, and no guarded transaction fails; an append at {@code REPEATABLE READ} or
 * {@code SERIALIZABLE} may fail with the documented {@link ConcurrencyFailureException},
 * and its transaction, run again after a random back-off (exponential, with full jitter,
 * up to 100 ms), must then commit within 30 seconds of its first attempt: the contract is
 * that a retried transaction eventually commits, not within how many attempts. Each
 * combination runs 5 seconds; {@code -Disolation.load.duration=PT90S} runs longer.
 * Figures are printed and appended to {@code target/isolation-load-figures.txt}.
 */
class IsolationLoadTests {

	private static final Duration RUN = Duration.parse(System.getProperty("isolation.load.duration", "PT5S"));

	/**
	 * How long an append overtaken by another is run again, from its first attempt,
	 * before the test fails.
	 */
	private static final Duration RETRY_FOR = Duration.ofSeconds(30);

	/**
	 * The longest back-off between two attempts of an append.
	 */
	private static final Duration MAX_BACK_OFF = Duration.ofMillis(100);

	private TestDatabase database;

	private final List<ConfigurableApplicationContext> nodes = new ArrayList<>();

	static Stream<Arguments> pools() {
		return Stream.of("READ_COMMITTED", "REPEATABLE_READ", "SERIALIZABLE")
			.flatMap((isolation) -> Stream.of(Arguments.of(isolation, true), Arguments.of(isolation, false)));
	}

	@BeforeEach
	void createSchema() {
		this.database = TestDatabase.createSchema();
		JdbcClient jdbc = JdbcClient.create(this.database.unpooled());
		jdbc.sql("CREATE TABLE ledger (kind VARCHAR(20) NOT NULL, term BIGINT NOT NULL)").update();
		jdbc.sql("CREATE TABLE counters (thread INT PRIMARY KEY, n BIGINT NOT NULL)").update();
		jdbc.sql("INSERT INTO counters VALUES (0, 0), (1, 0)").update();
	}

	@AfterEach
	void stopNodes() {
		this.nodes.forEach(ConfigurableApplicationContext::close);
		if (this.database != null) {
			this.database.drop();
		}
	}

	@ParameterizedTest(name = "{0}, auto-commit {1}")
	@MethodSource("pools")
	void leaderKeepsItsTermAndNoGuardedTransactionFailsAtThePoolsIsolationAndAutoCommit(String isolation,
			boolean autoCommit) throws Exception {
		ConfigurableApplicationContext leader = start("node-1", isolation, autoCommit);
		Leadership leadership = leader.getBean(Leadership.class);
		await().atMost(Duration.ofSeconds(15)).until(() -> leadership.isLeader("a"));
		ConfigurableApplicationContext follower = start("node-2", isolation, autoCommit);
		FencingToken token = leadership.token("a").orElseThrow();
		TransactionTemplate transactions = leader.getBean(TransactionTemplate.class);
		JdbcClient jdbc = JdbcClient.create(leader.getBean(DataSource.class));
		String expected = isolation.replace('_', ' ').toLowerCase(java.util.Locale.ROOT);
		String level = transactions
			.execute((status) -> jdbc.sql("SHOW transaction_isolation").query(String.class).single());
		assertThat(level).as("the isolation of the application's transactions").isEqualTo(expected);
		Load load = leader.getBean(Load.class);
		await("the daemon agent to run").atMost(Duration.ofSeconds(30)).until(() -> load.count("daemon") > 0);
		Fencing fencing = leader.getBean(Fencing.class);
		DecisionLog log = leader.getBean(DecisionLog.class);
		Batch batch = leader.getBean(Batch.class);
		long renewedBefore = renewedAtMillis(jdbc);
		long end = System.nanoTime() + RUN.toNanos();
		List<Runnable> work = List.of(() -> load.run("lease", () -> transactions.execute((status) -> {
			fencing.guard(token);
			return insert(jdbc, "lease", token.term());
		})), () -> load.run("lease", () -> transactions.execute((status) -> {
			fencing.guard(token);
			return insert(jdbc, "lease", token.term());
		})), () -> load.run("leader-only", () -> {
			batch.run();
			return null;
		}), () -> load.run("append", () -> append(transactions, jdbc, log, token, 0, load)),
				() -> load.run("append", () -> append(transactions, jdbc, log, token, 1, load)));
		ExecutorService threads = Executors.newFixedThreadPool(work.size());
		List<Future<?>> writers = new ArrayList<>();
		for (Runnable unit : work) {
			writers.add(threads.submit(() -> {
				while (System.nanoTime() < end && load.failures.size() < 10) {
					unit.run();
				}
			}));
		}
		for (Future<?> writer : writers) {
			writer.get(RUN.toSeconds() + 60, TimeUnit.SECONDS);
		}
		threads.shutdownNow();
		long renewedAfter = renewedAtMillis(jdbc);
		String figures = String.format(
				"%s auto-commit=%s run=%s: lease=%d leader-only=%d daemon=%d append=%d append-retries=%d "
						+ "renewed-for=%dms failures=%d",
				isolation, autoCommit, RUN, load.count("lease"), load.count("leader-only"), load.count("daemon"),
				load.count("append"), load.retries.get(), renewedAfter - renewedBefore, load.failures.size());
		System.out.println(figures);
		Files.writeString(Path.of("target", "isolation-load-figures.txt"), figures + System.lineSeparator(),
				StandardOpenOption.CREATE, StandardOpenOption.APPEND);
		assertThat(load.failures).isEmpty();
		assertThat(leadership.token("a")).contains(token);
		assertThat(leader.getBean(GuardedWriteLoadTests.Revokes.class).events).isEmpty();
		assertThat(follower.getBean(GuardedWriteLoadTests.Revokes.class).changes)
			.allSatisfy((event) -> assertThat(event.leaderNodeId()).isEqualTo("node-1"));
		assertThat(renewedAfter - renewedBefore).as("the lease's renewals during the run, in ms")
			.isGreaterThan(RUN.toMillis() / 2);
		// Closing the leader stops its daemon agent, which runs until cancelled; the
		// follower first, so that it does not take the daemon over.
		follower.close();
		leader.close();
		JdbcClient stopped = JdbcClient.create(this.database.unpooled());
		for (String kind : List.of("lease", "leader-only", "daemon", "append")) {
			assertThat(load.count(kind)).as(kind).isPositive();
			if (!kind.equals("append")) {
				assertThat(ledger(stopped, kind)).as(kind).isEqualTo(load.count(kind));
			}
		}
		if (isolation.equals("READ_COMMITTED")) {
			assertThat(load.retries.get()).as("appends at READ COMMITTED wait for each other").isZero();
		}
		// Every committed append is in the log, once, and updated its thread's row.
		assertThat(stopped.sql("SELECT last_index FROM leader_log_heads WHERE group_name = 'a'")
			.query(Long.class)
			.single()).isEqualTo(load.count("append"));
		assertThat(stopped.sql("SELECT sum(n) FROM counters").query(Long.class).single())
			.isEqualTo(load.count("append"));
	}

	private static Object append(TransactionTemplate transactions, JdbcClient jdbc, DecisionLog log, FencingToken token,
			int thread, Load load) {
		long deadline = System.nanoTime() + RETRY_FOR.toNanos();
		for (int retry = 0;; retry++) {
			try {
				return transactions.execute((status) -> {
					jdbc.sql("UPDATE counters SET n = n + 1 WHERE thread = ?").param(thread).update();
					return log.append(token, "count", Integer.toString(thread));
				});
			}
			catch (ConcurrencyFailureException ex) {
				if (System.nanoTime() - deadline >= 0) {
					throw ex;
				}
				load.retries.incrementAndGet();
				// Exponential back-off with full jitter, as a retry policy has: a random
				// sleep up to 1, 2, 4 ... ms, capped. The contract is only that a retried
				// transaction eventually commits, so the retry is bounded in time, not in
				// attempts: on a loaded machine, the other appender, which commits and
				// appends again without sleeping, overtook one thread fifty times in a
				// row.
				long cap = Math.min(MAX_BACK_OFF.toMillis(), 1L << Math.min(retry, 20));
				try {
					Thread.sleep(ThreadLocalRandom.current().nextLong(cap + 1));
				}
				catch (InterruptedException interrupted) {
					Thread.currentThread().interrupt();
					throw ex;
				}
			}
		}
	}

	private static int insert(JdbcClient jdbc, String kind, long term) {
		return jdbc.sql("INSERT INTO ledger VALUES (?, ?)").params(kind, term).update();
	}

	private static long ledger(JdbcClient jdbc, String kind) {
		return jdbc.sql("SELECT count(*) FROM ledger WHERE kind = ?").param(kind).query(Long.class).single();
	}

	private static long renewedAtMillis(JdbcClient jdbc) {
		return jdbc
			.sql("SELECT (extract(epoch FROM renewed_at) * 1000)::bigint FROM leader_leases WHERE group_name = 'a'")
			.query(Long.class)
			.single();
	}

	private ConfigurableApplicationContext start(String nodeId, String isolation, boolean autoCommit) {
		ConfigurableApplicationContext context = new SpringApplicationBuilder(LoadApplication.class)
			.web(WebApplicationType.NONE)
			.run("--spring.datasource.url=" + this.database.url(),
					"--spring.datasource.username=" + this.database.user(),
					"--spring.datasource.password=" + this.database.password(),
					"--spring.datasource.hikari.transaction-isolation=TRANSACTION_" + isolation,
					"--spring.datasource.hikari.auto-commit=" + autoCommit, "--leader.node.id=" + nodeId,
					"--leader.groups=a", "--leader.daemons.group=a", "--leader.lease.duration=3s",
					"--leader.lease.renew-interval=300ms", "--leader.lease.retry-interval=300ms",
					"--leader.node.expiry=3s", "--leader.daemons.ack-timeout=5s");
		this.nodes.add(context);
		return context;
	}

	@Configuration(proxyBeanMethods = false)
	@ImportAutoConfiguration({ DataSourceAutoConfiguration.class, DataSourceTransactionManagerAutoConfiguration.class,
			TransactionAutoConfiguration.class, PostgresStoresAutoConfiguration.class,
			MariaDbStoresAutoConfiguration.class, JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class })
	static class LoadApplication {

		@Bean
		GuardedWriteLoadTests.Revokes revokes() {
			return new GuardedWriteLoadTests.Revokes();
		}

		@Bean
		Load load() {
			return new Load();
		}

		@Bean
		Batch batch(DataSource dataSource) {
			return new Batch(JdbcClient.create(dataSource));
		}

		@Bean
		DaemonAgent outbox(TransactionTemplate transactions, DataSource dataSource, Load load) {
			JdbcClient jdbc = JdbcClient.create(dataSource);
			return (context) -> {
				while (!context.isCancelled()) {
					load.run("daemon", () -> transactions.execute((status) -> {
						context.guard();
						return insert(jdbc, "daemon", context.generation());
					}));
					context.awaitCancellation(Duration.ofMillis(5));
				}
			};
		}

	}

	/**
	 * Counts the transactions that committed, by kind, and the appending transactions run
	 * again, and keeps those that failed.
	 */
	static class Load {

		final List<Throwable> failures = new CopyOnWriteArrayList<>();

		private final Map<String, AtomicLong> counts = new ConcurrentHashMap<>();

		final AtomicLong retries = new AtomicLong();

		void run(String kind, Supplier<?> transaction) {
			try {
				transaction.get();
				this.counts.computeIfAbsent(kind, (key) -> new AtomicLong()).incrementAndGet();
			}
			catch (RuntimeException ex) {
				this.failures.add(ex);
			}
		}

		long count(String kind) {
			AtomicLong count = this.counts.get(kind);
			return (count != null) ? count.get() : 0;
		}

	}

	public static class Batch {

		private final JdbcClient jdbc;

		Batch(JdbcClient jdbc) {
			this.jdbc = jdbc;
		}

		@LeaderOnly(group = "a", fenced = true)
		@Transactional
		public void run() {
			insert(this.jdbc, "leader-only", FencingToken.current().term());
		}

	}

}
