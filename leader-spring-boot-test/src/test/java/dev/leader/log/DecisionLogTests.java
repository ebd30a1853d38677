package dev.leader.log;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.LongStream;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.FencingToken;
import dev.leader.StaleLeadershipException;
import dev.leader.actuate.DecisionLogHealthIndicator;
import dev.leader.jdbc.LeaderSchemaMigration;
import dev.leader.jdbc.PostgresCoordinationStore;
import dev.leader.jdbc.PostgresLogStore;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.CoordinationStore.AcquireResult;
import dev.leader.test.TestDatabase;
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
 * {@link DecisionLog} against real PostgreSQL: fenced, gap-free appends, the tail of
 * every node, and the reads by consistency. Two nodes, {@code a} and {@code b}, each with
 * its own log store, and notifications on their own listening connections.
 */
class DecisionLogTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	private static final Duration TIMEOUT = Duration.ofSeconds(10);

	private TestDatabase database;

	private HikariDataSource dataSource;

	private PostgresCoordinationStore leases;

	private TransactionTemplate transactions;

	private JdbcClient jdbc;

	private final List<DecisionLog> logs = new ArrayList<>();

	private final List<PostgresCoordinationStore> listeners = new ArrayList<>();

	@BeforeEach
	void createSchema() {
		this.database = TestDatabase.createSchema();
		this.dataSource = this.database.dataSource(12);
		new LeaderSchemaMigration(this.dataSource, PREFIX).migrate();
		this.leases = new PostgresCoordinationStore(this.dataSource, PREFIX, Duration.ofSeconds(5));
		this.transactions = new TransactionTemplate(new DataSourceTransactionManager(this.dataSource));
		this.jdbc = JdbcClient.create(this.dataSource);
		this.jdbc.sql("CREATE TABLE decisions (payload VARCHAR(100) NOT NULL)").update();
	}

	@AfterEach
	void dropSchema() {
		this.logs.forEach(DecisionLog::stop);
		this.listeners.forEach(PostgresCoordinationStore::disconnect);
		this.dataSource.close();
		this.database.drop();
	}

	@Test
	void leaderAppendsGaplessIndexesInCommitOrderAndEveryNodeAppliesEachOnceInOrder() {
		FencingToken token = acquire("g", "a");
		Recorder onA = new Recorder("g");
		Recorder onB = new Recorder("g");
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
		for (Recorder recorder : List.of(onA, onB)) {
			assertThat(recorder.entries).extracting(LogEntry::index)
				.containsExactlyElementsOf(LongStream.rangeClosed(1, 20).boxed().toList());
			assertThat(recorder.entries).extracting(LogEntry::payload).doesNotContain("p2", "p5", "p29");
		}
	}

	@Test
	void appendJoinsTheCallersTransactionAndCommitsWithItsWrites() {
		FencingToken token = acquire("g", "a");
		DecisionLog a = start("a", true, new Recorder("g"));
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
	void appendMakesTheCommitOfItsTransactionDurableWhateverTheSessionSays() {
		FencingToken token = acquire("g", "a");
		DecisionLog a = start("a", true, new Recorder("g"));
		String setting = this.transactions.execute((tx) -> {
			this.jdbc.sql("SET LOCAL synchronous_commit = off").update();
			a.append(token, "set", "x");
			return this.jdbc.sql("SELECT current_setting('synchronous_commit')").query(String.class).single();
		});
		assertThat(setting).isEqualTo("on");
	}

	@Test
	void appendOfAStaleTermIsRejectedAndWritesNothing() {
		FencingToken stale = acquireFor("g", "a", Duration.ofMillis(200));
		DecisionLog a = start("a", true, new Recorder("g"));
		DecisionLog b = start("b", true, new Recorder("g"));
		a.append(stale, "set", "from a");
		await().atMost(TIMEOUT)
			.until(() -> this.jdbc.sql("SELECT expires_at <= clock_timestamp() FROM leader_leases")
				.query(Boolean.class)
				.single());
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
		FencingToken token = acquire("g", "a");
		Recorder onB = new Recorder("g");
		DecisionLog a = start("a", true, new Recorder("g"));
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
						boolean rollBack = ThreadLocalRandom.current().nextInt(5) == 0;
						Bookmark entry = this.transactions.execute((tx) -> {
							Bookmark appended = a.append(token, "set", thread + " " + indexes.size());
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
			assertThat(onB.entries).extracting(LogEntry::index)
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
		Recorder blocked = new Recorder("g") {

			@Override
			public void apply(LogEntry entry) throws Exception {
				released.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
				super.apply(entry);
			}

		};
		DecisionLog a = start("a", true, new Recorder("g"));
		DecisionLog b = start("b", true, blocked);
		Bookmark entry = a.append(token, "set", "x");
		assertThat(b.awaitApplied(entry, Duration.ofMillis(200))).as("applied while the applier is blocked").isFalse();
		released.countDown();
		assertThat(b.awaitApplied(entry, TIMEOUT)).isTrue();
		assertThat(blocked.entries).extracting(LogEntry::payload).containsExactly("x");
		Bookmark otherHistory = new Bookmark("g", token.term() + 1, 1);
		assertThatIllegalStateException().isThrownBy(() -> b.awaitApplied(otherHistory, TIMEOUT))
			.withMessageContaining("not in the history");
	}

	@Test
	void bookmarkBeyondTheLogTimesOutWithoutTheTailReadingAgainAndAgain() throws Exception {
		FencingToken token = acquire("g", "a");
		AtomicInteger reads = new AtomicInteger();
		PostgresLogStore store = new PostgresLogStore(this.dataSource, PREFIX, Duration.ofSeconds(5),
				Duration.ofSeconds(10), null);
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
		DecisionLog b = new DecisionLog(counted, "b", List.of(new Recorder("g")));
		b.start();
		this.logs.add(b);
		start("a", true, new Recorder("g")).append(token, "set", "x");
		assertThat(b.awaitApplied(new Bookmark("g", token.term(), 1), TIMEOUT)).isTrue();
		int before = reads.get();
		assertThat(b.awaitApplied(new Bookmark("g", token.term(), 1000), Duration.ofMillis(500))).isFalse();
		assertThat(reads.get() - before).as("reads for a bookmark the log never reached").isLessThanOrEqualTo(2);
	}

	@Test
	void readIndexCatchesUpANodeThatHearsNoNotification() throws Exception {
		FencingToken token = acquire("g", "a");
		DecisionLog a = start("a", true, new Recorder("g"));
		Recorder deaf = new Recorder("g");
		DecisionLog b = start("b", false, deaf);
		await().atMost(TIMEOUT).until(() -> b.staleness("g").isPresent());
		for (int i = 0; i < 5; i++) {
			a.append(token, "set", "p" + i);
		}
		assertThat(b.awaitApplied(new Bookmark("g", 0, 0), TIMEOUT)).isTrue();
		assertThat(b.applied("g").index()).as("applied without a notification").isZero();
		assertThat(b.awaitReadIndex("g", TIMEOUT)).isTrue();
		assertThat(b.applied("g")).isEqualTo(new Bookmark("g", token.term(), 5));
		assertThat(deaf.entries).hasSize(5);
	}

	@Test
	void stalenessBoundComesFromTheLastReadAndARefreshStaysWithinTheBound() throws Exception {
		acquire("g", "a");
		DecisionLog b = start("b", false, new Recorder("g"));
		await().atMost(TIMEOUT).until(() -> b.staleness("g").isPresent());
		Duration before = b.staleness("g").orElseThrow();
		await().atMost(TIMEOUT).until(() -> b.staleness("g").orElseThrow().compareTo(before.plusMillis(100)) > 0);
		assertThat(b.awaitStaleness("g", Duration.ofMillis(50), TIMEOUT)).isTrue();
		assertThat(b.staleness("g").orElseThrow()).isLessThan(Duration.ofMillis(100));
	}

	@Test
	void failingApplierHaltsItsGroupAndNothingAfterIsApplied() throws Exception {
		FencingToken token = acquire("g", "a");
		Recorder failing = new Recorder("g") {

			@Override
			public void apply(LogEntry entry) throws Exception {
				if (entry.index() == 3) {
					throw new IllegalArgumentException("bad entry");
				}
				super.apply(entry);
			}

		};
		DecisionLog a = start("a", true, new Recorder("g"));
		DecisionLog b = start("b", true, failing);
		for (int i = 0; i < 5; i++) {
			a.append(token, "set", "p" + i);
		}
		await().atMost(TIMEOUT).until(() -> b.failure("g").isPresent());
		assertThat(b.failure("g").orElseThrow()).hasMessageContaining("entry 3").hasRootCauseMessage("bad entry");
		assertThat(b.applied("g").index()).isEqualTo(2);
		assertThatIllegalStateException().isThrownBy(() -> b.awaitApplied(new Bookmark("g", token.term(), 5), TIMEOUT))
			.withMessageContaining("halted");
		assertThat(failing.entries).extracting(LogEntry::index).containsExactly(1L, 2L);
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
		DecisionLog a = start("a", true, new Recorder("g"));
		assertThatIllegalArgumentException().isThrownBy(() -> a.applied("other"))
			.withMessageContaining("no LogApplier bean for it");
		assertThatIllegalArgumentException().isThrownBy(() -> a.append(token, "bad type; drop", "x"));
		assertThat(count("leader_log_entries")).isZero();
	}

	@Test
	void countRetentionKeepsTheNewestEntriesAndALateNodeResetsItsAppliersToWhereTheLogWasCut() throws Exception {
		FencingToken token = acquire("g", "a");
		AtomicInteger truncations = new AtomicInteger();
		DecisionLog a = startRetaining("a", new LogRetention(5, null, Duration.ofMillis(50)), token, truncations,
				new Recorder("g"));
		Bookmark last = null;
		for (int i = 1; i <= 20; i++) {
			last = a.append(token, "set", "p" + i);
		}
		await().atMost(TIMEOUT).until(() -> count("leader_log_entries") == 5);
		assertThat(this.jdbc.sql("SELECT min(log_index) FROM leader_log_entries").query(Long.class).single())
			.isEqualTo(16);
		assertThat(this.jdbc.sql("SELECT truncated_index FROM leader_log_starts WHERE group_name = 'g'")
			.query(Long.class)
			.single()).isEqualTo(15);
		// Once the leader has applied what it truncated, an idle log costs it no
		// statement.
		await().atMost(TIMEOUT).until(() -> a.applied("g").index() == 20);
		await().pollDelay(Duration.ofMillis(200)).atMost(TIMEOUT).until(() -> true);
		int settled = truncations.get();
		await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(2)).until(() -> truncations.get() == settled);
		Resettable late = new Resettable("g");
		DecisionLog c = start("c", true, late);
		assertThat(c.awaitApplied(last, TIMEOUT)).isTrue();
		assertThat(late.resets).containsExactly(new Bookmark("g", token.term(), 15));
		assertThat(late.entries).extracting(LogEntry::index).containsExactly(16L, 17L, 18L, 19L, 20L);
		assertThat(c.awaitApplied(new Bookmark("g", token.term(), 3), TIMEOUT)).as("a bookmark of the reset's term")
			.isTrue();
		assertThatIllegalStateException()
			.isThrownBy(() -> c.awaitApplied(new Bookmark("g", token.term() - 1, 3), TIMEOUT))
			.withMessageContaining("cannot check the bookmark's term");
		assertThat(a.awaitApplied(new Bookmark("g", token.term(), 3), TIMEOUT)).as("on a node that applied it")
			.isTrue();
	}

	@Test
	void ageRetentionRemovesEntriesOlderThanTheLimitAndKeepsTheLast() throws Exception {
		FencingToken token = acquire("g", "a");
		DecisionLog a = startRetaining("a", new LogRetention(0, Duration.ofMillis(300), Duration.ofMillis(50)), token,
				new AtomicInteger(), new Recorder("g"));
		for (int i = 1; i <= 3; i++) {
			a.append(token, "set", "p" + i);
		}
		await().atMost(TIMEOUT)
			.until(() -> this.jdbc.sql("SELECT log_index FROM leader_log_entries").query(Long.class).list(),
					(indexes) -> indexes.equals(List.of(3L)));
		Bookmark fourth = a.append(token, "set", "p4");
		assertThat(fourth.index()).isEqualTo(4);
		assertThat(
				this.jdbc.sql("SELECT log_index FROM leader_log_entries ORDER BY log_index").query(Long.class).list())
			.as("the young entry stays")
			.contains(4L);
		await().atMost(TIMEOUT)
			.until(() -> this.jdbc.sql("SELECT log_index FROM leader_log_entries").query(Long.class).list(),
					(indexes) -> indexes.equals(List.of(4L)));
		Resettable late = new Resettable("g");
		DecisionLog c = start("c", true, late);
		assertThat(c.awaitApplied(fourth, TIMEOUT)).isTrue();
		assertThat(late.resets).containsExactly(new Bookmark("g", token.term(), 3));
		assertThat(late.entries).extracting(LogEntry::payload).containsExactly("p4");
	}

	@Test
	void lateNodeWhoseApplierCannotResetHaltsItsGroupVisiblyRatherThanSkip() throws Exception {
		FencingToken token = acquire("g", "a");
		DecisionLog a = startRetaining("a", new LogRetention(2, null, Duration.ofMillis(50)), token,
				new AtomicInteger(), new Recorder("g"));
		for (int i = 1; i <= 6; i++) {
			a.append(token, "set", "p" + i);
		}
		await().atMost(TIMEOUT).until(() -> count("leader_log_entries") == 2);
		Recorder late = new Recorder("g");
		DecisionLog c = start("c", true, late);
		await().atMost(TIMEOUT).until(() -> c.failure("g").isPresent());
		assertThat(c.failure("g").orElseThrow())
			.hasMessageContaining("truncated through entry g@" + token.term() + ".4")
			.hasMessageContaining("does not implement LogApplier.reset");
		assertThat(late.entries).isEmpty();
		assertThat(c.applied("g").index()).isZero();
		Health health = new DecisionLogHealthIndicator(c).health(true);
		assertThat(health.getStatus()).isEqualTo(Status.DOWN);
		assertThat(health.getDetails()).extractingByKey("groups").asString().contains("LogApplier.reset");
		assertThatIllegalStateException().isThrownBy(() -> c.awaitApplied(new Bookmark("g", token.term(), 6), TIMEOUT))
			.withMessageContaining("halted");
	}

	@Test
	void storeWithoutRetentionIsAskedOnceAndTheLogGoesOnWithEveryEntry() throws Exception {
		FencingToken token = acquire("g", "a");
		PostgresLogStore store = new PostgresLogStore(this.dataSource, PREFIX, Duration.ofSeconds(5),
				Duration.ofSeconds(10), null);
		AtomicInteger asked = new AtomicInteger();
		LogStore keepsAll = new LogStore() {

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
				return store.head(group);
			}

			@Override
			public Truncated truncate(FencingToken leading, String nodeId, long keepEntries, Duration maxAge,
					int limit) {
				asked.incrementAndGet();
				return LogStore.super.truncate(leading, nodeId, keepEntries, maxAge, limit);
			}

		};
		Recorder recorder = new Recorder("g");
		DecisionLog a = new DecisionLog(keepsAll, "a", List.of(recorder),
				new LogRetention(1, Duration.ofMillis(1), Duration.ofMillis(20)), (group) -> Optional.of(token));
		a.start();
		this.logs.add(a);
		Bookmark last = null;
		for (int i = 0; i < 3; i++) {
			last = a.append(token, "set", "p" + i);
			assertThat(a.awaitReadIndex("g", TIMEOUT)).isTrue();
		}
		assertThat(a.awaitApplied(last, TIMEOUT)).isTrue();
		await().atMost(TIMEOUT).until(() -> asked.get() >= 1);
		await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(2)).until(() -> asked.get() == 1);
		assertThat(recorder.entries).hasSize(3);
		assertThat(a.failure("g")).isEmpty();
		assertThat(count("leader_log_entries")).isEqualTo(3);
	}

	@Test
	void truncationOfAStaleTermIsRefusedAndRemovesNothing() {
		FencingToken stale = acquireFor("g", "a", Duration.ofMillis(200));
		PostgresLogStore store = new PostgresLogStore(this.dataSource, PREFIX, Duration.ofSeconds(5),
				Duration.ofSeconds(10), null);
		for (int i = 1; i <= 5; i++) {
			store.append(stale, "a", "set", "p" + i);
		}
		await().atMost(TIMEOUT)
			.until(() -> this.jdbc.sql("SELECT expires_at <= clock_timestamp() FROM leader_leases")
				.query(Boolean.class)
				.single());
		FencingToken current = acquire("g", "b");
		LogStore.Truncated refused = store.truncate(stale, "a", 1, null, 100);
		assertThat(refused.allowed()).isFalse();
		assertThat(refused.removed()).isZero();
		assertThat(store.truncate(current, "a", 1, null, 100).allowed()).as("another node's term").isFalse();
		assertThat(count("leader_log_entries")).isEqualTo(5);
		assertThat(count("leader_log_starts")).isZero();
		LogStore.Truncated truncated = store.truncate(current, "b", 1, null, 3);
		assertThat(truncated).isEqualTo(new LogStore.Truncated(true, 3, new Bookmark("g", stale.term(), 3)));
		assertThat(store.truncated("g")).isEqualTo(new Bookmark("g", stale.term(), 3));
		assertThat(store.truncate(current, "b", 1, null, 100).through()).isEqualTo(new Bookmark("g", stale.term(), 4));
		assertThat(store.read("g", 0, 10)).extracting(LogEntry::index).containsExactly(5L);
	}

	@Test
	void retentionLimitsAreCheckedWithMessagesThatNameTheProperty() {
		assertThatIllegalArgumentException().isThrownBy(() -> new LogRetention(-1, null, Duration.ofMinutes(1)))
			.withMessageContaining("leader.log.retention.max-entries");
		assertThatIllegalArgumentException()
			.isThrownBy(() -> new LogRetention(0, Duration.ofSeconds(-1), Duration.ofMinutes(1)))
			.withMessageContaining("leader.log.retention.max-age");
		assertThatIllegalArgumentException().isThrownBy(() -> new LogRetention(0, null, Duration.ZERO))
			.withMessageContaining("leader.log.retention.interval");
	}

	private DecisionLog start(String node, boolean notified, LogApplier applier) {
		PostgresCoordinationStore listener = null;
		if (notified) {
			listener = new PostgresCoordinationStore(this.dataSource, PREFIX, Duration.ofSeconds(5));
			this.listeners.add(listener);
		}
		DecisionLog log = new DecisionLog(
				new PostgresLogStore(this.dataSource, PREFIX, Duration.ofSeconds(5), Duration.ofSeconds(10), listener),
				node, List.of(applier));
		log.start();
		this.logs.add(log);
		return log;
	}

	private DecisionLog startRetaining(String node, LogRetention retention, FencingToken leading,
			AtomicInteger truncations, LogApplier applier) {
		PostgresCoordinationStore listener = new PostgresCoordinationStore(this.dataSource, PREFIX,
				Duration.ofSeconds(5));
		this.listeners.add(listener);
		PostgresLogStore store = new PostgresLogStore(this.dataSource, PREFIX, Duration.ofSeconds(5),
				Duration.ofSeconds(10), listener);
		LogStore counted = new LogStore() {

			@Override
			public Appended append(FencingToken token, String nodeId, String type, String payload) {
				return store.append(token, nodeId, type, payload);
			}

			@Override
			public List<LogEntry> read(String group, long afterIndex, int limit) {
				return store.read(group, afterIndex, limit);
			}

			@Override
			public Bookmark head(String group) {
				return store.head(group);
			}

			@Override
			public Truncated truncate(FencingToken token, String nodeId, long keepEntries, Duration maxAge, int limit) {
				truncations.incrementAndGet();
				return store.truncate(token, nodeId, keepEntries, maxAge, limit);
			}

			@Override
			public Bookmark truncated(String group) {
				return store.truncated(group);
			}

			@Override
			public AutoCloseable listen(LogListener listener) {
				return store.listen(listener);
			}

		};
		DecisionLog log = new DecisionLog(counted, node, List.of(applier), retention,
				(group) -> Optional.of(leading).filter((token) -> token.group().equals(group)));
		log.start();
		this.logs.add(log);
		return log;
	}

	private FencingToken acquire(String group, String node) {
		return acquireFor(group, node, Duration.ofSeconds(30));
	}

	private FencingToken acquireFor(String group, String node, Duration duration) {
		AcquireResult result = this.leases.acquire(group, node, duration);
		assertThat(result.granted()).isTrue();
		return new FencingToken(group, result.lease().term());
	}

	private long countElsewhere(String table) {
		// A connection of the pool's own, outside the transaction bound to the thread.
		try (Connection connection = this.dataSource.getConnection();
				Statement statement = connection.createStatement();
				ResultSet row = statement.executeQuery("SELECT count(*) FROM " + table)) {
			row.next();
			return row.getLong(1);
		}
		catch (SQLException ex) {
			throw new IllegalStateException(ex);
		}
	}

	private long count(String table) {
		return this.jdbc.sql("SELECT count(*) FROM " + table).query(Long.class).single();
	}

	private static class Recorder implements LogApplier {

		private final String group;

		final List<LogEntry> entries = new CopyOnWriteArrayList<>();

		Recorder(String group) {
			this.group = group;
		}

		@Override
		public String group() {
			return this.group;
		}

		@Override
		public void apply(LogEntry entry) throws Exception {
			this.entries.add(entry);
		}

	}

	private static class Resettable extends Recorder {

		final List<Bookmark> resets = new CopyOnWriteArrayList<>();

		Resettable(String group) {
			super(group);
		}

		@Override
		public void reset(Bookmark through) {
			this.resets.add(through);
		}

	}

}
