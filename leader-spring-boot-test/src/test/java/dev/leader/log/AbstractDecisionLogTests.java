package dev.leader.log;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.LongStream;

import javax.sql.DataSource;

import dev.leader.FencingToken;
import dev.leader.StaleLeadershipException;
import dev.leader.actuate.DecisionLogHealthIndicator;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.CoordinationStore.AcquireResult;
import dev.leader.node.NodeRegistration;
import dev.leader.test.Grants;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.awaitility.Awaitility.await;

/**
 * {@link DecisionLog} against a real database: fenced, gap-free appends, the tail of
 * every node, and the reads by consistency, the same behaviour on every database. Two
 * nodes, {@code a} and {@code b}, each with its own log store; a node that is followed
 * learns of appends as the database lets it without a statement of its own (PostgreSQL's
 * notifications, MariaDB's heartbeat). A subclass per database gives the data source,
 * with the starter's tables empty before each test, and the database's stores; the suite
 * adds the {@code decisions (payload)} table the tests write to. The tests of what only
 * one database does stay in its subclass.
 */
abstract class AbstractDecisionLogTests {

	static final TablePrefix PREFIX = new TablePrefix("leader_");

	static final Duration TIMEOUT = Duration.ofSeconds(10);

	private CoordinationStore leases;

	TransactionTemplate transactions;

	JdbcClient jdbc;

	final List<DecisionLog> logs = new ArrayList<>();

	private final CoordinationStores coordinationStores;

	/**
	 * Creates the suite on the coordination store of a database.
	 * @param coordinationStores the constructor of the database's coordination store
	 */
	AbstractDecisionLogTests(CoordinationStores coordinationStores) {
		this.coordinationStores = coordinationStores;
	}

	/**
	 * Returns the data source of the running test.
	 * @return the data source
	 */
	abstract DataSource dataSource();

	/**
	 * Creates the log store of a node, with a query timeout of five seconds and a hold
	 * limit of ten; the subclass closes what it started for it after the test.
	 * @param node the node's id
	 * @param followed whether the node learns of appends without a statement of its own
	 * @return the store
	 */
	abstract LogStore logStore(String node, boolean followed);

	/**
	 * Returns whether the lease of the group has expired by the database clock.
	 * @param group the group
	 * @return whether the lease expired
	 */
	abstract boolean expired(String group);

	/**
	 * Creates the database's coordination store, with a query timeout of five seconds.
	 * @return the store
	 */
	CoordinationStore coordinationStore() {
		return this.coordinationStores.create(dataSource(), PREFIX, Duration.ofSeconds(5));
	}

	@BeforeEach
	void createStores() {
		this.leases = coordinationStore();
		this.transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource()));
		this.jdbc = JdbcClient.create(dataSource());
		// Once for a class whose database is emptied rather than dropped between tests;
		// on MariaDB, on its default (transactional) engine, InnoDB.
		this.jdbc.sql("CREATE TABLE IF NOT EXISTS decisions (payload VARCHAR(100) NOT NULL)").update();
	}

	/**
	 * Stops what the subclass started for the nodes' log stores, once their logs have
	 * stopped.
	 */
	abstract void stopFollowing();

	@AfterEach
	void stopLogs() {
		this.logs.forEach(DecisionLog::stop);
		stopFollowing();
		this.leases.disconnect();
	}

	@Test
	void leaderAppendsGaplessIndexesInCommitOrderAndEveryNodeAppliesEachOnceInOrder() {
		FencingToken token = acquire("g", "a");
		RecordingApplier onA = new RecordingApplier("g");
		RecordingApplier onB = new RecordingApplier("g");
		DecisionLog a = start("a", true, onA);
		DecisionLog b = start("b", true, onB);
		List<Bookmark> appended = new ArrayList<>();
		for (int i = 0; i < 30; i++) {
			String payload = "p" + i;
			if (i % 3 == 2) {
				// rolled back with the transaction it joined: its index goes to the next
				this.transactions.executeWithoutResult((tx) -> {
					a.append(token, "set", payload);
					tx.setRollbackOnly();
				});
			}
			else {
				appended.add(a.append(token, "set", payload));
			}
		}
		assertThat(appended).extracting(Bookmark::index)
			.containsExactlyElementsOf(LongStream.rangeClosed(1, 20).boxed().toList());
		assertThat(appended).extracting(Bookmark::term).containsOnly(token.term());
		Bookmark last = appended.get(appended.size() - 1);
		await().atMost(TIMEOUT).until(() -> a.applied("g").equals(last) && b.applied("g").equals(last));
		for (RecordingApplier recorder : List.of(onA, onB)) {
			assertThat(recorder.entries()).extracting(LogEntry::index)
				.containsExactlyElementsOf(LongStream.rangeClosed(1, 20).boxed().toList());
			assertThat(recorder.entries()).extracting(LogEntry::payload).doesNotContain("p2", "p5", "p29");
		}
	}

	@Test
	void appendJoinsTheCallersTransactionAndCommitsWithItsWrites() {
		FencingToken token = acquire("g", "a");
		DecisionLog a = start("a", true, new RecordingApplier("g"));
		Bookmark entry = this.transactions.execute((tx) -> {
			this.jdbc.sql("INSERT INTO decisions (payload) VALUES ('x')").update();
			Bookmark appended = a.append(token, "set", "x");
			assertThat(countElsewhere("leader_log_entries")).as("seen by another connection before commit").isZero();
			return appended;
		});
		assertThat(entry).isEqualTo(new Bookmark("g", token.term(), 1));
		assertThat(count("decisions")).isOne();
		assertThat(count("leader_log_entries")).isOne();
	}

	@Test
	void appendOfAStaleTermIsRejectedAndWritesNothing() {
		FencingToken stale = acquireFor("g", "a", Duration.ofMillis(200));
		DecisionLog a = start("a", true, new RecordingApplier("g"));
		DecisionLog b = start("b", true, new RecordingApplier("g"));
		a.append(stale, "set", "from a");
		await().atMost(TIMEOUT).until(() -> expired("g"));
		FencingToken current = acquire("g", "b");
		assertThatExceptionOfType(StaleLeadershipException.class).isThrownBy(() -> a.append(stale, "set", "late"))
			.withMessageContaining("term " + current.term())
			.withMessageContaining("held by b")
			.satisfies((ex) -> assertThat(ex.getCurrentTerm()).isEqualTo(current.term()));
		assertThat(b.append(current, "set", "from b")).isEqualTo(new Bookmark("g", current.term(), 2));
		assertThatExceptionOfType(StaleLeadershipException.class).isThrownBy(() -> b.append(stale, "set", "forged"));
		assertThat(
				this.jdbc.sql("SELECT payload FROM leader_log_entries ORDER BY log_index").query(String.class).list())
			.containsExactly("from a", "from b");
	}

	@Test
	void appendsFromManyThreadsHaveNoGapAndEachThreadsEntriesKeepItsOrder() throws Exception {
		appendFromManyThreads(true);
	}

	/**
	 * Outside a transaction, concurrent appends of a group may commit together
	 * ({@code PostgresLogStore} batches them); each still gets its own index.
	 */
	@Test
	void appendsFromManyThreadsOutsideATransactionHaveNoGapAndEachThreadsEntriesKeepItsOrder() throws Exception {
		appendFromManyThreads(false);
	}

	/**
	 * Appends from 8 threads, 40 each, and checks that the indexes have no gap, that each
	 * thread's entries keep its order, and that a follower applies every one in order.
	 * @param inTransactions whether each append joins a transaction of its own, one in
	 * five of which rolls back, or commits by itself
	 */
	private void appendFromManyThreads(boolean inTransactions) throws Exception {
		FencingToken token = acquire("g", "a");
		RecordingApplier onB = new RecordingApplier("g");
		DecisionLog a = start("a", true, new RecordingApplier("g"));
		DecisionLog b = start("b", true, onB);
		int threads = 8;
		int each = 40;
		ExecutorService pool = Executors.newFixedThreadPool(threads);
		try {
			List<CompletableFuture<List<Long>>> results = new ArrayList<>();
			for (int t = 0; t < threads; t++) {
				String thread = "t" + t;
				results.add(CompletableFuture.supplyAsync(() -> {
					List<Long> indexes = new ArrayList<>();
					for (int i = 0; i < each; i++) {
						String payload = thread + " " + indexes.size();
						if (!inTransactions) {
							indexes.add(a.append(token, "set", payload).index());
							continue;
						}
						boolean rollBack = ThreadLocalRandom.current().nextInt(5) == 0;
						Bookmark entry = this.transactions.execute((tx) -> {
							Bookmark appended = a.append(token, "set", payload);
							if (rollBack) {
								tx.setRollbackOnly();
							}
							return appended;
						});
						if (!rollBack) {
							indexes.add(entry.index());
						}
					}
					return indexes;
				}, pool));
			}
			List<Long> all = new ArrayList<>();
			for (CompletableFuture<List<Long>> result : results) {
				List<Long> indexes = result.get(60, TimeUnit.SECONDS);
				assertThat(indexes).isSorted();
				all.addAll(indexes);
			}
			assertThat(all).containsExactlyInAnyOrderElementsOf(LongStream.rangeClosed(1, all.size()).boxed().toList());
			await().atMost(TIMEOUT).until(() -> b.applied("g").index() == all.size());
			assertThat(onB.entries()).extracting(LogEntry::index)
				.containsExactlyElementsOf(LongStream.rangeClosed(1, all.size()).boxed().toList());
		}
		finally {
			pool.shutdownNow();
		}
	}

	@Test
	void bookmarkReadWaitsForTheEntryAndFailsForAnEntryOfAnotherHistory() throws Exception {
		FencingToken token = acquire("g", "a");
		CountDownLatch released = new CountDownLatch(1);
		RecordingApplier blocked = new RecordingApplier("g") {

			@Override
			public void apply(LogEntry entry) throws Exception {
				released.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
				super.apply(entry);
			}

		};
		DecisionLog a = start("a", true, new RecordingApplier("g"));
		DecisionLog b = start("b", true, blocked);
		Bookmark entry = a.append(token, "set", "x");
		assertThat(b.awaitApplied(entry, Duration.ofMillis(200))).as("applied while the applier is blocked").isFalse();
		released.countDown();
		assertThat(b.awaitApplied(entry, TIMEOUT)).isTrue();
		assertThat(blocked.entries()).extracting(LogEntry::payload).containsExactly("x");
		Bookmark otherHistory = new Bookmark("g", token.term() + 1, 1);
		assertThatIllegalStateException().isThrownBy(() -> b.awaitApplied(otherHistory, TIMEOUT))
			.withMessageContaining("not in the history");
	}

	@Test
	void bookmarkBeyondTheLogTimesOutWithoutTheTailReadingAgainAndAgain() throws Exception {
		FencingToken token = acquire("g", "a");
		AtomicInteger reads = new AtomicInteger();
		LogStore store = logStore("b", false);
		LogStore counted = new LogStore() {

			@Override
			public Appended append(FencingToken appending, String nodeId, String type, String payload) {
				return store.append(appending, nodeId, type, payload);
			}

			@Override
			public List<LogEntry> read(String group, long afterIndex, int limit) {
				reads.incrementAndGet();
				return store.read(group, afterIndex, limit);
			}

			@Override
			public Bookmark head(String group) {
				return store.head(group);
			}

		};
		DecisionLog b = new DecisionLog(counted, "b", List.of(new RecordingApplier("g")));
		b.start();
		this.logs.add(b);
		start("a", true, new RecordingApplier("g")).append(token, "set", "x");
		assertThat(b.awaitApplied(new Bookmark("g", token.term(), 1), TIMEOUT)).isTrue();
		int before = reads.get();
		assertThat(b.awaitApplied(new Bookmark("g", token.term(), 1000), Duration.ofMillis(500))).isFalse();
		assertThat(reads.get() - before).as("reads for a bookmark the log never reached").isLessThanOrEqualTo(2);
	}

	@Test
	void readIndexCatchesUpANodeThatHearsNoNotification() throws Exception {
		FencingToken token = acquire("g", "a");
		DecisionLog a = start("a", true, new RecordingApplier("g"));
		RecordingApplier deaf = new RecordingApplier("g");
		DecisionLog b = start("b", false, deaf);
		await().atMost(TIMEOUT).until(() -> b.staleness("g").isPresent());
		for (int i = 0; i < 5; i++) {
			a.append(token, "set", "p" + i);
		}
		assertThat(b.awaitApplied(new Bookmark("g", 0, 0), TIMEOUT)).isTrue();
		assertThat(b.applied("g").index()).as("applied without a notification").isZero();
		assertThat(b.awaitReadIndex("g", TIMEOUT)).isTrue();
		assertThat(b.applied("g")).isEqualTo(new Bookmark("g", token.term(), 5));
		assertThat(deaf.entries()).hasSize(5);
	}

	@Test
	void stalenessBoundComesFromTheLastReadAndARefreshStaysWithinTheBound() throws Exception {
		acquire("g", "a");
		DecisionLog b = start("b", false, new RecordingApplier("g"));
		await().atMost(TIMEOUT).until(() -> b.staleness("g").isPresent());
		Duration before = b.staleness("g").orElseThrow();
		await().atMost(TIMEOUT).until(() -> b.staleness("g").orElseThrow().compareTo(before.plusMillis(100)) > 0);
		assertThat(b.awaitStaleness("g", Duration.ofMillis(50), TIMEOUT)).isTrue();
		assertThat(b.staleness("g").orElseThrow()).isLessThan(Duration.ofMillis(100));
	}

	/**
	 * a read of the log's end that the tail overtook (it applied a later entry before the
	 * end came back) shows a node ahead, not a loss: a bounded read within its bound is
	 * served, even while the tail applies a slow entry and confirms nothing more.
	 */
	@Test
	void boundedReadIsServedAfterAReadOfTheLogsEndThatTheTailOvertook() throws Exception {
		FencingToken token = acquire("g", "a");
		DecisionLog a = start("a", true, new RecordingApplier("g"));
		CountDownLatch released = new CountDownLatch(1);
		RecordingApplier slowOnB = new RecordingApplier("g") {

			@Override
			public void apply(LogEntry entry) throws Exception {
				if (entry.payload().equals("slow")) {
					released.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
				}
				super.apply(entry);
			}

		};
		// Not followed: on MariaDB the notifications' polling confirms the end each time.
		LogStore store = logStore("b", false);
		AtomicReference<Runnable> overtake = new AtomicReference<>();
		LogStore overtaken = new LogStore() {

			@Override
			public Appended append(FencingToken appending, String nodeId, String type, String payload) {
				return store.append(appending, nodeId, type, payload);
			}

			@Override
			public List<LogEntry> read(String group, long afterIndex, int limit) {
				return store.read(group, afterIndex, limit);
			}

			@Override
			public Bookmark head(String group) {
				Bookmark end = store.head(group);
				Runnable between = overtake.getAndSet(null);
				if (between != null) {
					between.run();
				}
				return end;
			}

		};
		DecisionLog b = new DecisionLog(overtaken, "b", List.of(slowOnB));
		b.start();
		this.logs.add(b);
		try {
			assertThat(b.awaitApplied(a.append(token, "set", "x1"), TIMEOUT)).isTrue();
			Duration bound = Duration.ofMillis(300);
			await().atMost(TIMEOUT).until(() -> b.staleness("g").orElseThrow().compareTo(bound) > 0);
			overtake.set(() -> {
				try {
					assertThat(b.awaitApplied(a.append(token, "set", "x2"), TIMEOUT)).isTrue();
				}
				catch (InterruptedException ex) {
					throw new IllegalStateException(ex);
				}
				a.append(token, "set", "slow");
			});
			assertThat(b.awaitStaleness("g", bound, Duration.ofSeconds(1))).as(() -> "within " + bound
					+ " after a read of entry 1 that came back once entry 2 was applied; staleness " + b.staleness("g"))
				.isTrue();
			assertThat(overtake.get()).as("the tail overtook the read").isNull();
		}
		finally {
			released.countDown();
		}
	}

	@Test
	void failingApplierHaltsItsGroupAndNothingAfterIsApplied() throws Exception {
		FencingToken token = acquire("g", "a");
		RecordingApplier failing = new RecordingApplier("g") {

			@Override
			public void apply(LogEntry entry) throws Exception {
				if (entry.index() == 3) {
					throw new IllegalArgumentException("bad entry");
				}
				super.apply(entry);
			}

		};
		DecisionLog a = start("a", true, new RecordingApplier("g"));
		DecisionLog b = start("b", true, failing);
		for (int i = 0; i < 5; i++) {
			a.append(token, "set", "p" + i);
		}
		await().atMost(TIMEOUT).until(() -> b.failure("g").isPresent());
		assertThat(b.failure("g").orElseThrow()).hasMessageContaining("entry 3").hasRootCauseMessage("bad entry");
		assertThat(b.applied("g").index()).isEqualTo(2);
		assertThatIllegalStateException().isThrownBy(() -> b.awaitApplied(new Bookmark("g", token.term(), 5), TIMEOUT))
			.withMessageContaining("halted");
		assertThat(failing.entries()).extracting(LogEntry::index).containsExactly(1L, 2L);
		Health health = new DecisionLogHealthIndicator(b).health(true);
		assertThat(health.getStatus()).isEqualTo(Status.DOWN);
		assertThat(health.getDetails()).extractingByKey("groups")
			.asString()
			.contains("halted=")
			.contains("applied=g@" + token.term() + ".2");
		assertThat(new DecisionLogHealthIndicator(a).health(true).getStatus()).isEqualTo(Status.UP);
	}

	@Test
	void groupWithoutApplierAndInvalidTypeAreRefused() {
		FencingToken token = acquire("g", "a");
		DecisionLog a = start("a", true, new RecordingApplier("g"));
		assertThatIllegalArgumentException().isThrownBy(() -> a.applied("other"))
			.withMessageContaining("no LogApplier bean for it");
		assertThatIllegalArgumentException().isThrownBy(() -> a.append(token, "bad type; drop", "x"));
		assertThat(count("leader_log_entries")).isZero();
	}

	@Test
	void appendingTransactionDoesNotHoldUpTheHoldersRenewal() throws Exception {
		FencingToken token = acquire("g", "a");
		DecisionLog a = start("a", false, new RecordingApplier("g"));
		NodeRegistration node = Grants.node("a");
		CountDownLatch appended = new CountDownLatch(1);
		CountDownLatch renewed = new CountDownLatch(1);
		CompletableFuture<Bookmark> transaction = CompletableFuture
			.supplyAsync(() -> this.transactions.execute((tx) -> {
				Bookmark entry = a.append(token, "set", "x");
				appended.countDown();
				try {
					renewed.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
				return entry;
			}));
		assertThat(appended.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
		long started = System.nanoTime();
		CoordinationStore.Tick tick = this.leases.tick(node, Map.of("g", token.term()), List.of("g"),
				Duration.ofSeconds(30), Duration.ofSeconds(10));
		long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
		renewed.countDown();
		assertThat(tick.renewed()).as("renewed while the append's transaction is open").containsKey("g");
		assertThat(millis).as("renewal time").isLessThan(2000);
		assertThat(transaction.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS))
			.isEqualTo(new Bookmark("g", token.term(), 1));
	}

	DecisionLog start(String node, boolean followed, LogApplier applier) {
		DecisionLog log = new DecisionLog(logStore(node, followed), node, List.of(applier));
		log.start();
		this.logs.add(log);
		return log;
	}

	FencingToken acquire(String group, String node) {
		return acquireFor(group, node, Duration.ofSeconds(30));
	}

	FencingToken acquireFor(String group, String node, Duration duration) {
		AcquireResult result = Grants.acquire(this.leases, group, node, duration);
		assertThat(result.granted()).isTrue();
		return new FencingToken(group, result.lease().term());
	}

	private long countElsewhere(String table) {
		// A connection of the pool's own, outside the transaction bound to the thread.
		try (Connection connection = dataSource().getConnection();
				Statement statement = connection.createStatement();
				ResultSet row = statement.executeQuery("SELECT count(*) FROM " + table)) {
			row.next();
			return row.getLong(1);
		}
		catch (SQLException ex) {
			throw new IllegalStateException(ex);
		}
	}

	long count(String table) {
		return this.jdbc.sql("SELECT count(*) FROM " + table).query(Long.class).single();
	}

	/**
	 * The constructor of a database's coordination store.
	 */
	@FunctionalInterface
	interface CoordinationStores {

		CoordinationStore create(DataSource dataSource, TablePrefix prefix, Duration queryTimeout);

	}

}
