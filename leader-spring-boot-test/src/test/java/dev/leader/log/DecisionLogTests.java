package dev.leader.log;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import dev.leader.FencingToken;
import dev.leader.actuate.DecisionLogHealthIndicator;
import dev.leader.postgres.PostgresCoordinationStore;
import dev.leader.postgres.PostgresLogStore;
import dev.leader.test.MigratedSchema;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.awaitility.Awaitility.await;

/**
 * {@link DecisionLog} against real PostgreSQL, in a fresh schema per test: a followed
 * node hears the append notifications on a listening connection of its own. What only
 * PostgreSQL shows: an append makes its transaction's commit durable.
 */
class DecisionLogTests extends AbstractDecisionLogTests {

	@RegisterExtension
	final MigratedSchema schema = new MigratedSchema(12);

	private final List<PostgresCoordinationStore> listeners = new ArrayList<>();

	DecisionLogTests() {
		super(PostgresCoordinationStore::new);
	}

	@Override
	void stopFollowing() {
		this.listeners.forEach(PostgresCoordinationStore::disconnect);
	}

	@Override
	DataSource dataSource() {
		return this.schema.dataSource();
	}

	@Override
	LogStore logStore(String node, boolean followed) {
		return new PostgresLogStore(dataSource(), PREFIX, Duration.ofSeconds(5), Duration.ofSeconds(10),
				followed ? listener() : null);
	}

	@Override
	boolean expired(String group) {
		return this.schema.leaseExpired(group);
	}

	@Test
	void appendMakesTheCommitOfItsTransactionDurableWhateverTheSessionSays() {
		FencingToken token = acquire("g", "a");
		DecisionLog a = start("a", true, new RecordingApplier("g"));
		String setting = this.transactions.execute((tx) -> {
			this.jdbc.sql("SET LOCAL synchronous_commit = off").update();
			a.append(token, "set", "x");
			return this.jdbc.sql("SELECT current_setting('synchronous_commit')").query(String.class).single();
		});
		assertThat(setting).isEqualTo("on");
	}

	@Test
	void countRetentionKeepsTheNewestEntriesAndALateNodeResetsItsAppliersToWhereTheLogWasCut() throws Exception {
		FencingToken token = acquire("g", "a");
		AtomicInteger truncations = new AtomicInteger();
		DecisionLog a = startRetaining("a", new LogRetention(5, null, Duration.ofMillis(50)), token, truncations,
				new RecordingApplier("g"));
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
		assertThat(late.entries()).extracting(LogEntry::index).containsExactly(16L, 17L, 18L, 19L, 20L);
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
				new AtomicInteger(), new RecordingApplier("g"));
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
		assertThat(late.entries()).extracting(LogEntry::payload).containsExactly("p4");
	}

	@Test
	void lateNodeWhoseApplierCannotResetHaltsItsGroupVisiblyRatherThanSkip() throws Exception {
		FencingToken token = acquire("g", "a");
		DecisionLog a = startRetaining("a", new LogRetention(2, null, Duration.ofMillis(50)), token,
				new AtomicInteger(), new RecordingApplier("g"));
		for (int i = 1; i <= 6; i++) {
			a.append(token, "set", "p" + i);
		}
		await().atMost(TIMEOUT).until(() -> count("leader_log_entries") == 2);
		RecordingApplier late = new RecordingApplier("g");
		DecisionLog c = start("c", true, late);
		await().atMost(TIMEOUT).until(() -> c.failure("g").isPresent());
		assertThat(c.failure("g").orElseThrow())
			.hasMessageContaining("truncated through entry g@" + token.term() + ".4")
			.hasMessageContaining("does not implement LogApplier.reset");
		assertThat(late.entries()).isEmpty();
		assertThat(c.applied("g").index()).isZero();
		Health health = new DecisionLogHealthIndicator(c).health(true);
		assertThat(health.getStatus()).isEqualTo(Status.DOWN);
		assertThat(health.getDetails()).extractingByKey("groups").asString().contains("LogApplier.reset");
		assertThatIllegalStateException().isThrownBy(() -> c.awaitApplied(new Bookmark("g", token.term(), 6), TIMEOUT))
			.withMessageContaining("halted");
	}

	@Test
	void storeWithoutRetentionIsRefusedWithRetentionLimitsAndAcceptedWithout() {
		PostgresLogStore store = new PostgresLogStore(dataSource(), PREFIX, Duration.ofSeconds(5),
				Duration.ofSeconds(10), null);
		LogStore keepsAll = new DelegatingStore(store, new AtomicInteger(), false);
		List<LogApplier> appliers = List.of(new RecordingApplier("g"));
		assertThatIllegalStateException()
			.isThrownBy(() -> new DecisionLog(keepsAll, "a", appliers, new LogRetention(1, null, Duration.ofMinutes(1)),
					(group) -> Optional.empty()))
			.withMessageContaining("leader.log.retention.max-entries and max-age cannot be set");
		assertThatIllegalStateException().isThrownBy(() -> new DecisionLog(keepsAll, "a", appliers,
				new LogRetention(0, Duration.ofHours(1), Duration.ofMinutes(1)), (group) -> Optional.empty()));
		assertThat(
				new DecisionLog(keepsAll, "a", appliers, LogRetention.keepAll(), (group) -> Optional.empty()).groups())
			.containsExactly("g");
	}

	@Test
	void truncationOfAStaleTermIsRefusedAndRemovesNothing() {
		FencingToken stale = acquireFor("g", "a", Duration.ofMillis(200));
		PostgresLogStore store = new PostgresLogStore(dataSource(), PREFIX, Duration.ofSeconds(5),
				Duration.ofSeconds(10), null);
		for (int i = 1; i <= 5; i++) {
			store.append(stale, "a", "set", "p" + i);
		}
		await().atMost(TIMEOUT)
			.until(() -> this.jdbc.sql("SELECT expires_at <= clock_timestamp() FROM leader_leases")
				.query(Boolean.class)
				.single());
		FencingToken current = acquire("g", "b");
		LogStore.Truncated refused = store.truncate(stale, "a", 1, null, new Bookmark("g", stale.term(), 5), 100);
		assertThat(refused.allowed()).isFalse();
		assertThat(refused.removed()).isZero();
		assertThat(store.truncate(current, "a", 1, null, new Bookmark("g", stale.term(), 5), 100).allowed())
			.as("another node's term")
			.isFalse();
		assertThat(count("leader_log_entries")).isEqualTo(5);
		assertThat(count("leader_log_starts")).isZero();
		LogStore.Truncated truncated = store.truncate(current, "b", 1, null, new Bookmark("g", stale.term(), 5), 3);
		assertThat(truncated).isEqualTo(new LogStore.Truncated(true, 3, new Bookmark("g", stale.term(), 3)));
		assertThat(store.truncated("g")).isEqualTo(new Bookmark("g", stale.term(), 3));
		assertThat(store.truncate(current, "b", 1, null, new Bookmark("g", stale.term(), 3), 100).removed())
			.as("nothing after what the node applied")
			.isZero();
		assertThat(store.truncate(current, "b", 1, null, new Bookmark("g", stale.term(), 5), 100).through())
			.isEqualTo(new Bookmark("g", stale.term(), 4));
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

	private DecisionLog startRetaining(String node, LogRetention retention, FencingToken leading,
			AtomicInteger truncations, LogApplier applier) {
		LogStore counted = new DelegatingStore(logStore(node, true), truncations, true);
		DecisionLog log = new DecisionLog(counted, node, List.of(applier), retention,
				(group) -> Optional.of(leading).filter((token) -> token.group().equals(group)));
		log.start();
		this.logs.add(log);
		return log;
	}

	@Test
	void entriesAreAppliedOnceInOrderAcrossAStopThatOutwaitsASlowApplierAndAStart() throws Exception {
		FencingToken token = acquire("g", "a");
		CountDownLatch released = new CountDownLatch(1);
		CountDownLatch blocked = new CountDownLatch(1);
		List<long[]> calls = new CopyOnWriteArrayList<>();
		RecordingApplier slow = new RecordingApplier("g") {

			@Override
			public void apply(LogEntry entry) throws Exception {
				calls.add(new long[] { entry.index(), System.nanoTime() });
				if (entry.index() == 2) {
					blocked.countDown();
					// Ignores interrupts: an applier that does not honour them.
					long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
					while (released.getCount() > 0 && System.nanoTime() < deadline) {
						try {
							released.await(100, TimeUnit.MILLISECONDS);
						}
						catch (InterruptedException ex) {
							// ignored on purpose
						}
					}
				}
				super.apply(entry);
			}

		};
		DecisionLog b = start("b", true, slow);
		DecisionLog a = start("a", true, new RecordingApplier("g"));
		for (int i = 1; i <= 5; i++) {
			a.append(token, "set", "x" + i);
		}
		assertThat(blocked.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
		b.stop();
		long stopped = System.nanoTime();
		b.start();
		long started = System.nanoTime();
		released.countDown();
		await().atMost(TIMEOUT).until(() -> slow.entries().size() >= 5);
		a.append(token, "set", "x6");
		await().atMost(TIMEOUT).until(() -> slow.entries().size() >= 6);
		assertThat(slow.entries().stream().map(LogEntry::index)).as("applied once each, in order")
			.containsExactly(1L, 2L, 3L, 4L, 5L, 6L);
		assertThat(calls).as("no applier called between the stop's return and the start")
			.noneMatch((call) -> call[1] > stopped && call[1] < started);
		assertThat(calls.stream().map((call) -> call[0])).containsExactly(1L, 2L, 3L, 4L, 5L, 6L);
	}

	// A listening connection of a followed node's own, disconnected after the test.
	private PostgresCoordinationStore listener() {
		PostgresCoordinationStore listener = new PostgresCoordinationStore(dataSource(), PREFIX, Duration.ofSeconds(5));
		this.listeners.add(listener);
		return listener;
	}

	static class Resettable extends RecordingApplier {

		final List<Bookmark> resets = new CopyOnWriteArrayList<>();

		Resettable(String group) {
			super(group);
		}

		@Override
		public void reset(Bookmark through) {
			this.resets.add(through);
		}

	}

	/**
	 * A log store that counts the truncations asked of it, and may say it has no
	 * retention.
	 */
	private static final class DelegatingStore extends ForwardingLogStore {

		private final AtomicInteger truncations;

		private final boolean retention;

		DelegatingStore(LogStore store, AtomicInteger truncations, boolean retention) {
			super(store);
			this.truncations = truncations;
			this.retention = retention;
		}

		@Override
		public boolean supportsRetention() {
			return this.retention;
		}

		@Override
		public Truncated truncate(FencingToken token, String nodeId, long keepEntries, @Nullable Duration maxAge,
				Bookmark applied, int limit) {
			this.truncations.incrementAndGet();
			return super.truncate(token, nodeId, keepEntries, maxAge, applied, limit);
		}

	}

}
