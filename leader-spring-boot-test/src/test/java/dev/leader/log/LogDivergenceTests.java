package dev.leader.log;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.FencingToken;
import dev.leader.actuate.DecisionLogHealthIndicator;
import dev.leader.jdbc.LeaderSchemaMigration;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.CoordinationStore.AcquireResult;
import dev.leader.node.NodeRegistration;
import dev.leader.postgres.PostgresCoordinationStore;
import dev.leader.postgres.PostgresLogStore;
import dev.leader.test.Grants;
import dev.leader.test.ReplicatedPostgres;
import dev.leader.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * The decision log through a failover that loses entries a follower had applied, with
 * real servers: a primary and a streaming standby ({@link ReplicatedPostgres}); the
 * standby stops streaming, the leader appends entries that a follower applies, the
 * primary crashes ({@code pg_ctl stop -m immediate}) and the standby is promoted. The new
 * leader then appends other entries at the lost indexes, under a term of the new epoch.
 * The follower must never serve the lost entries as current, must say why, and must apply
 * the surviving log once its applier has rewound.
 */
class LogDivergenceTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	private static final Duration TIMEOUT = Duration.ofSeconds(20);

	private static final String GROUP = "g";

	@RegisterExtension
	@Order(1)
	final ReplicatedPostgres servers = new ReplicatedPostgres();

	private TestDatabase database;

	private HikariDataSource dataSource;

	private final List<PostgresCoordinationStore> stores = new ArrayList<>();

	private final List<DecisionLog> logs = new ArrayList<>();

	@BeforeEach
	void migrate() {
		this.database = this.servers.createSchema();
		this.dataSource = this.database.dataSource(8);
		new LeaderSchemaMigration(this.dataSource, PREFIX).migrate();
	}

	@AfterEach
	void stop() {
		this.logs.forEach(DecisionLog::stop);
		this.stores.forEach(PostgresCoordinationStore::disconnect);
		this.dataSource.close();
	}

	@Test
	void followerThatAppliedLostEntriesNeverServesThemAndAppliesTheSurvivingLogOnceItsApplierRewound()
			throws Exception {
		Rewinding onB = new Rewinding();
		History history = loseTwoEntriesAppliedBy(onB);
		DecisionLog b = history.follower();
		// The new leader appends as many entries as were lost: the log's end is at the
		// follower's index, under another term.
		FencingToken second = acquire();
		assertThat(second.term()).as("a term of the new epoch").isGreaterThan(history.first().term());
		Bookmark new9 = history.leader().append(second, "set", "new-9");
		Bookmark new10 = history.leader().append(second, "set", "new-10");
		assertThat(new10.index()).isEqualTo(history.lost().index());
		// A read index is served only once the follower holds the surviving log.
		await().atMost(TIMEOUT).until(() -> servedAsCurrent(() -> b.awaitReadIndex(GROUP, Duration.ofSeconds(2)), onB));
		assertThat(payloads(onB)).containsExactly("kept-1", "kept-2", "kept-3", "new-9", "new-10");
		assertThat(onB.rewinds).containsExactly(new Bookmark(GROUP, history.first().term(), 3));
		assertThat(b.applied(GROUP)).isEqualTo(new10);
		assertThat(b.failure(GROUP)).isEmpty();
		// The lost entry's bookmark says it was lost; the new ones are served.
		assertThatExceptionOfType(LostEntryException.class)
			.isThrownBy(() -> b.awaitApplied(history.lost(), Duration.ofSeconds(1)))
			.withMessageContaining("was lost in a failover");
		assertThat(b.awaitApplied(new9, TIMEOUT)).isTrue();
		Bookmark new11 = history.leader().append(second, "set", "new-11");
		assertThat(b.awaitApplied(new11, TIMEOUT)).isTrue();
		assertThat(payloads(onB)).containsExactly("kept-1", "kept-2", "kept-3", "new-9", "new-10", "new-11");
		// A bookmark of a lost entry beyond the log's end is not waited for either.
		Bookmark lostBeyond = new Bookmark(GROUP, history.first().term(), 12);
		assertThatExceptionOfType(LostEntryException.class)
			.isThrownBy(() -> b.awaitApplied(lostBeyond, Duration.ofSeconds(5)));
	}

	@Test
	void followerWhoseApplierCannotRewindAppliesNothingOnTopOfLostEntriesAndSaysItsLogDiverged() throws Exception {
		RecordingApplier onB = new RecordingApplier(GROUP);
		History history = loseTwoEntriesAppliedBy(onB);
		DecisionLog b = history.follower();
		FencingToken second = acquire();
		history.leader().append(second, "set", "new-9");
		history.leader().append(second, "set", "new-10");
		history.leader().append(second, "set", "new-11");
		// The notification of the new entries makes the follower read the log.
		await().atMost(TIMEOUT).until(() -> b.failure(GROUP).isPresent());
		assertThat(b.failure(GROUP).get()).isInstanceOf(LogDivergedException.class)
			.hasMessageContaining("diverged")
			.hasMessageContaining("does not implement LogApplier.rewind");
		LogDivergedException diverged = (LogDivergedException) b.failure(GROUP).get();
		assertThat(diverged.applied()).isEqualTo(history.lost());
		assertThat(diverged.common()).isEqualTo(new Bookmark(GROUP, history.first().term(), 3));
		assertThat(payloads(onB)).as("nothing applied on top of the lost entries")
			.containsExactly("kept-1", "kept-2", "kept-3", "lost-4", "lost-5");
		assertThatExceptionOfType(LogDivergedException.class)
			.isThrownBy(() -> b.awaitReadIndex(GROUP, Duration.ofSeconds(1)));
		assertThatExceptionOfType(LogDivergedException.class)
			.isThrownBy(() -> b.awaitApplied(history.lost(), Duration.ofSeconds(1)));
		assertThatExceptionOfType(LogDivergedException.class)
			.isThrownBy(() -> b.awaitStaleness(GROUP, Duration.ofMinutes(1), Duration.ofSeconds(1)));
		Health health = new DecisionLogHealthIndicator(b).health(true);
		assertThat(health.getStatus()).isEqualTo(Status.DOWN);
		assertThat(health.getDetails().toString()).contains("diverged=");
	}

	/**
	 * the follower halted on the divergence (its applier cannot rewind), and the new
	 * leader has appended nothing yet. The next heartbeat reads the log's end at entry 3,
	 * which the follower applied with that term: {@code confirmed} counts it as caught
	 * up, and {@code awaitStaleness} serves the bounded read locally, with the lost
	 * entries 4 and 5 in its state, without looking at the divergence.
	 */
	@Test
	void boundedReadIsNotServedOnAFollowerWhoseLogDivergedAfterAHeartbeatFindsTheLogEndBeforeWhatItApplied()
			throws Exception {
		RecordingApplier onB = new RecordingApplier(GROUP);
		History lost = loseTwoEntriesAppliedBy(onB);
		// The follower's heartbeat, as the engine sends it each renew interval.
		heartbeat(lost.followerStore());
		await().atMost(TIMEOUT).until(() -> lost.follower().failure(GROUP).isPresent());
		assertThat(lost.follower().failure(GROUP).get()).isInstanceOf(LogDivergedException.class);
		heartbeat(lost.followerStore());
		assertThat(payloads(onB)).contains("lost-4", "lost-5");
		assertThatExceptionOfType(IllegalStateException.class)
			.as("a bounded read on a node that holds lost entries and says it diverged")
			.isThrownBy(() -> lost.follower().awaitStaleness(GROUP, Duration.ofMinutes(1), Duration.ofSeconds(1)));
	}

	/**
	 * a read found that the log ends before the entries this node applied (a read index,
	 * or a bookmark read of an entry the follower had not applied yet, which the failover
	 * lost too), but the tail's own read of the log, which would find the divergence, is
	 * slow (the database was just promoted, say). A bounded read must not be served from
	 * the confirmation that the tail recorded before the failover, with the lost entries
	 * in its state.
	 * @param evidence the read that finds the log's end before what the follower applied
	 */
	@ParameterizedTest
	@ValueSource(strings = { "read-index", "lost-bookmark" })
	void boundedReadIsNotServedOnceAReadFoundTheLogEndBeforeWhatItAppliedWhileTheTailHasNotReadTheLogAgain(
			String evidence) throws Exception {
		this.servers.replicateSynchronously(true);
		FencingToken first = acquire();
		DecisionLog a = start("a", new RecordingApplier(GROUP));
		RecordingApplier onB = new RecordingApplier(GROUP);
		SlowTail slow = new SlowTail(
				new PostgresLogStore(this.dataSource, PREFIX, Duration.ofSeconds(5), Duration.ofSeconds(10), store()));
		DecisionLog b = new DecisionLog(slow, "b", List.of(onB));
		b.start();
		this.logs.add(b);
		try {
			Bookmark lost = appendKeptThenLost(a, first);
			assertThat(b.awaitApplied(lost, TIMEOUT)).isTrue();
			assertThat(b.awaitStaleness(GROUP, Duration.ofMinutes(1), Duration.ofSeconds(1)))
				.as("within the bound before the failover")
				.isTrue();
			slow.hold();
			if (evidence.equals("read-index")) {
				this.servers.failover();
				await().atMost(TIMEOUT)
					.untilAsserted(() -> assertThatExceptionOfType(LogDivergedException.class)
						.isThrownBy(() -> b.awaitReadIndex(GROUP, Duration.ofSeconds(1))));
			}
			else {
				Bookmark unapplied = a.append(first, "set", "lost-6");
				await().atMost(TIMEOUT).until(slow::held);
				this.servers.failover();
				await().atMost(TIMEOUT)
					.untilAsserted(() -> assertThatExceptionOfType(LostEntryException.class)
						.isThrownBy(() -> b.awaitApplied(unapplied, Duration.ofMillis(500))));
			}
			// The tail goes to read the log again once it learns the log's end, and is
			// held there.
			await("the tail's read of the log, held").atMost(TIMEOUT).until(slow::held);
			assertThat(payloads(onB)).contains("lost-4", "lost-5");
			assertThatExceptionOfType(LogDivergedException.class)
				.as("a bounded read on a node that found its log apart and has not read it again")
				.isThrownBy(() -> b.awaitStaleness(GROUP, Duration.ofMinutes(1), Duration.ofSeconds(1)));
		}
		finally {
			slow.release();
		}
	}

	/**
	 * the follower read the lost entries 4 and 5 in one batch and is still applying 5
	 * (after 4) when the failover comes; its heartbeat then finds the log ending at 3.
	 * That is evidence of a loss, since a read that returned before the heartbeat was
	 * sent found entry 5: no bounded read may be served from the confirmation before the
	 * failover, with entry 4 in the state.
	 */
	@Test
	void boundedReadIsNotServedOnceAHeartbeatFindsTheLogEndingBeforeEntriesTheTailIsStillApplying() throws Exception {
		this.servers.replicateSynchronously(true);
		FencingToken first = acquire();
		DecisionLog a = start("a", new RecordingApplier(GROUP));
		CountDownLatch applying = new CountDownLatch(1);
		CountDownLatch released = new CountDownLatch(1);
		RecordingApplier onB = new RecordingApplier(GROUP) {

			@Override
			public void apply(LogEntry entry) throws Exception {
				if (entry.payload().equals("lost-5")) {
					applying.countDown();
					released.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
				}
				super.apply(entry);
			}

		};
		PostgresCoordinationStore followerStore = store();
		DecisionLog b = start("b", onB, followerStore);
		try {
			Bookmark kept = null;
			for (int i = 1; i <= 3; i++) {
				kept = a.append(first, "set", "kept-" + i);
			}
			assertThat(b.awaitApplied(kept, TIMEOUT)).isTrue();
			assertThat(b.awaitStaleness(GROUP, Duration.ofMinutes(1), Duration.ofSeconds(1))).isTrue();
			this.servers.replicateSynchronously(false);
			this.servers.standby().orElseThrow().stopStreaming();
			// One transaction, so that the follower reads both entries at once.
			new TransactionTemplate(new DataSourceTransactionManager(this.dataSource))
				.executeWithoutResult((status) -> {
					a.append(first, "set", "lost-4");
					a.append(first, "set", "lost-5");
				});
			assertThat(applying.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).as("entry 5 being applied").isTrue();
			assertThat(payloads(onB)).containsExactly("kept-1", "kept-2", "kept-3", "lost-4");
			this.servers.failover();
			heartbeat(followerStore);
			assertThatExceptionOfType(LogDivergedException.class)
				.as("a bounded read after a heartbeat found the log ending before entries the node read")
				.isThrownBy(() -> b.awaitStaleness(GROUP, Duration.ofMinutes(1), Duration.ofSeconds(1)));
		}
		finally {
			released.countDown();
		}
	}

	/**
	 * while an applier rewinds (it reloads a snapshot, say), the reads must fail with
	 * {@link LogDivergedException} (LogApplier#rewind's contract). A heartbeat during the
	 * rewind makes the bounded read pass, on half-rewound state.
	 */
	@Test
	void boundedReadIsNotServedWhileTheAppliersRewind() throws Exception {
		CountDownLatch rewinding = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		RecordingApplier onB = new RecordingApplier(GROUP) {

			@Override
			public long rewind(Bookmark common) throws Exception {
				rewinding.countDown();
				release.await(30, TimeUnit.SECONDS);
				entries().removeIf((entry) -> entry.index() > common.index());
				return common.index();
			}

		};
		History lost = loseTwoEntriesAppliedBy(onB);
		try {
			heartbeat(lost.followerStore());
			assertThat(rewinding.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).as("rewind called").isTrue();
			assertThat(lost.follower().failure(GROUP)).get().isInstanceOf(LogDivergedException.class);
			heartbeat(lost.followerStore());
			assertThatExceptionOfType(LogDivergedException.class).as("a bounded read during the rewind")
				.isThrownBy(() -> lost.follower().awaitStaleness(GROUP, Duration.ofMinutes(1), Duration.ofSeconds(1)));
		}
		finally {
			release.countDown();
		}
	}

	/**
	 * a bookmark of a lost entry, read after the failover but before the new leader
	 * appends anything. The follower has rewound to entry 3; the lease is in the new
	 * epoch, so no leader of the bookmark's term can ever append entry 5 again, yet the
	 * read waits out its timeout and answers "not yet" (over HTTP a 503 with Retry-After,
	 * forever while the group is quiet) instead of saying the entry was lost.
	 */
	@Test
	void bookmarkOfALostEntryIsAnsweredLostBeforeTheNewLeaderAppends() throws Exception {
		Rewinding onB = new Rewinding();
		History lost = loseTwoEntriesAppliedBy(onB);
		FencingToken second = acquire();
		assertThat(second.term()).isGreaterThan(lost.first().term());
		heartbeat(lost.followerStore());
		await().atMost(TIMEOUT).until(() -> onB.rewinds.size() == 1 && lost.follower().failure(GROUP).isEmpty());
		assertThat(lost.follower().applied(GROUP).index()).isEqualTo(3);
		assertThatExceptionOfType(LostEntryException.class).as("the bookmark of lost entry 5")
			.isThrownBy(() -> lost.follower().awaitApplied(lost.lost(), Duration.ofSeconds(2)));
	}

	/**
	 * the leader's own truncation is bounded by the index it applied, not by the entries
	 * it applied. Node a applied lost entries 4 and 5, was stopped during the failover,
	 * leads again under the new epoch and starts once the new leader's entries 4 to 6 are
	 * in: its first truncation removes entries through 5 of the new history, which it
	 * never applied, so its applier, which can rewind, would have to reset (and, without
	 * reset, halt the group) instead of rewinding to entry 3 and applying on.
	 */
	@Test
	void leaderNeverTruncatesEntriesOfTheNewHistoryThatItNeverApplied() throws Exception {
		this.servers.replicateSynchronously(true);
		FencingToken first = acquire();
		AtomicReference<FencingToken> leading = new AtomicReference<>(first);
		Rewinding onA = new Rewinding();
		DecisionLog a = new DecisionLog(
				new PostgresLogStore(this.dataSource, PREFIX, Duration.ofSeconds(5), Duration.ofSeconds(10), store()),
				"a", List.of(onA), new LogRetention(1, null, Duration.ofHours(1)),
				(group) -> Optional.ofNullable(leading.get()));
		this.logs.add(a);
		leading.set(null);
		a.start();
		Bookmark lost = appendKeptThenLost(a, first);
		assertThat(a.awaitApplied(lost, TIMEOUT)).isTrue();
		a.stop();
		this.servers.failover();
		FencingToken second = acquire();
		a.append(second, "set", "new-4");
		a.append(second, "set", "new-5");
		Bookmark new6 = a.append(second, "set", "new-6");
		leading.set(second);
		a.start();
		// Through the divergence and the rewind, which the retention of the new term must
		// not make impossible.
		await().atMost(TIMEOUT)
			.untilAsserted(() -> assertThat(a.applied(GROUP)).as(() -> "applied; failure: " + a.failure(GROUP))
				.isEqualTo(new6));
		assertThat(a.failure(GROUP)).as("the leader's log after its own truncation").isEmpty();
		assertThat(payloads(onA)).containsExactly("kept-1", "kept-2", "kept-3", "new-4", "new-5", "new-6");
	}

	/**
	 * Appends three entries that the standby receives, then two that only the primary and
	 * the follower have, crashes the primary and promotes the standby.
	 */
	private History loseTwoEntriesAppliedBy(RecordingApplier onB) throws Exception {
		this.servers.replicateSynchronously(true);
		FencingToken first = acquire();
		DecisionLog a = start("a", new RecordingApplier(GROUP));
		PostgresCoordinationStore followerStore = store();
		DecisionLog b = start("b", onB, followerStore);
		Bookmark lost = appendKeptThenLost(a, first);
		assertThat(b.awaitApplied(lost, TIMEOUT)).as("applied before the failover").isTrue();
		assertThat(payloads(onB)).containsExactly("kept-1", "kept-2", "kept-3", "lost-4", "lost-5");
		this.servers.failover();
		// Before the new leader appends anything, the follower serves no read that holds
		// the lost entries.
		await().atMost(TIMEOUT)
			.untilAsserted(() -> assertThatExceptionOfType(IllegalStateException.class)
				.isThrownBy(() -> b.awaitApplied(lost, Duration.ofSeconds(1))));
		// Served, if at all, once the follower holds only the surviving entries.
		servedAsCurrent(() -> b.awaitApplied(new Bookmark(GROUP, first.term(), 2), Duration.ofSeconds(1)), onB);
		servedAsCurrent(() -> b.awaitReadIndex(GROUP, Duration.ofSeconds(1)), onB);
		servedAsCurrent(() -> b.awaitStaleness(GROUP, Duration.ofMinutes(1), Duration.ofSeconds(1)), onB);
		return new History(a, b, followerStore, first, lost);
	}

	/**
	 * Appends three entries that the standby receives, stops its streaming, and appends
	 * two that only the primary has.
	 * @param leader the leader's log
	 * @param first the leader's token
	 * @return the bookmark of the last entry, which a failover loses
	 */
	private Bookmark appendKeptThenLost(DecisionLog leader, FencingToken first) {
		for (int i = 1; i <= 3; i++) {
			leader.append(first, "set", "kept-" + i);
		}
		this.servers.replicateSynchronously(false);
		this.servers.standby().orElseThrow().stopStreaming();
		leader.append(first, "set", "lost-4");
		return leader.append(first, "set", "lost-5");
	}

	/**
	 * Runs a read and tells whether it was served, checking that the applier then holds
	 * no lost entry.
	 */
	private static boolean servedAsCurrent(Read read, RecordingApplier applier) throws InterruptedException {
		try {
			if (!read.served()) {
				return false;
			}
		}
		catch (IllegalStateException ex) {
			// Diverged, or halted by an applier that cannot rewind.
			return false;
		}
		assertThat(payloads(applier)).as("state served as current").noneMatch((payload) -> payload.startsWith("lost"));
		return true;
	}

	private static List<String> payloads(RecordingApplier applier) {
		return applier.entries().stream().map(LogEntry::payload).toList();
	}

	private FencingToken acquire() {
		PostgresCoordinationStore leases = store();
		AcquireResult result = await().atMost(TIMEOUT)
			.ignoreExceptions()
			.until(() -> Grants.acquire(leases, GROUP, "a", Duration.ofSeconds(30)), AcquireResult::granted);
		return new FencingToken(GROUP, result.lease().term());
	}

	private DecisionLog start(String node, LogApplier applier) {
		return start(node, applier, store());
	}

	private DecisionLog start(String node, LogApplier applier, PostgresCoordinationStore notifications) {
		DecisionLog log = new DecisionLog(new PostgresLogStore(this.dataSource, PREFIX, Duration.ofSeconds(5),
				Duration.ofSeconds(10), notifications), node, List.of(applier));
		log.start();
		this.logs.add(log);
		return log;
	}

	// One heartbeat of node b, which asks about the group (the L row carries its log's
	// end), retried until the new primary answers.
	private void heartbeat(PostgresCoordinationStore store) {
		NodeRegistration node = new NodeRegistration("b", "app", "host-b", 2);
		await().atMost(TIMEOUT).ignoreExceptions().until(() -> {
			store.tick(node, Map.of(), List.of(GROUP), Duration.ofSeconds(30), Duration.ofSeconds(10));
			return true;
		});
	}

	private PostgresCoordinationStore store() {
		PostgresCoordinationStore store = new PostgresCoordinationStore(this.dataSource, PREFIX, Duration.ofSeconds(5));
		this.stores.add(store);
		return store;
	}

	@FunctionalInterface
	private interface Read {

		boolean served() throws InterruptedException;

	}

	private record History(DecisionLog leader, DecisionLog follower, PostgresCoordinationStore followerStore,
			FencingToken first, Bookmark lost) {
	}

	/**
	 * A log store whose reads of the entries, on the tail's thread, wait while held.
	 */
	private static final class SlowTail extends ForwardingLogStore {

		private final CountDownLatch released = new CountDownLatch(1);

		private volatile boolean holding;

		private volatile boolean held;

		SlowTail(LogStore store) {
			super(store);
		}

		void hold() {
			this.holding = true;
		}

		boolean held() {
			return this.held;
		}

		void release() {
			this.released.countDown();
		}

		@Override
		public List<LogEntry> read(String group, long afterIndex, int limit) {
			if (this.holding && Thread.currentThread().getName().startsWith("leader-log-")) {
				this.held = true;
				try {
					this.released.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
			}
			return super.read(group, afterIndex, limit);
		}

	}

	/**
	 * Records what it applies, and rewinds by dropping the entries after the common one.
	 */
	static class Rewinding extends RecordingApplier {

		final List<Bookmark> rewinds = new CopyOnWriteArrayList<>();

		Rewinding() {
			super(GROUP);
		}

		@Override
		public long rewind(Bookmark common) {
			this.rewinds.add(common);
			entries().removeIf((entry) -> entry.index() > common.index());
			return common.index();
		}

	}

}
