package dev.leader.test;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.LongStream;

import dev.leader.FencingToken;
import dev.leader.lease.CoordinationStore;
import dev.leader.log.Bookmark;
import dev.leader.log.LogEntry;
import dev.leader.log.LogStore;
import dev.leader.log.LogStore.Appended;
import dev.leader.node.NodeRegistration;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The behaviour every {@link LogStore} must show, run against the real coordinator. A
 * store passes this suite through a small subclass whose {@link #createStores()} gives,
 * on an empty coordinator (no leases, nodes or entries), the log store under test and the
 * {@link CoordinationStore} of the same coordinator, which the suite registers nodes and
 * takes leases with; {@link #destroyStores} removes them again. The subclass also
 * declares, in {@link #hasRetention()}, whether its store removes entries: the suite
 * checks that the store says the same, then runs either the retention tests or the tests
 * of a store that keeps every entry, never neither.
 * <p>
 * Every append runs outside any transaction, a statement of its own, so the suite holds
 * for stores without transactions. Indexes run from 1 with no gap, an append goes only
 * under the term that holds the lease and never below the log's last term, and a refusal
 * reports the lease as it stands. The concurrency fuzz test races threads of the leader
 * that append at once, and checks exactly that every index went to one append and that
 * the log holds them all, in order.
 */
public abstract class AbstractLogStoreContractTests extends StoresContract<AbstractLogStoreContractTests.Stores> {

	private static final String GROUP = "orders";

	private static final String LEADER = "leader";

	private static final String SUCCESSOR = "successor";

	private static final Duration LEASE = Duration.ofSeconds(30);

	private static final Duration EXPIRY = Duration.ofSeconds(10);

	private static final Duration WAIT = Duration.ofSeconds(10);

	private static final Bookmark START = new Bookmark(GROUP, 0, 0);

	private FencingToken leader;

	/**
	 * Returns whether the store under test implements retention:
	 * {@link LogStore#truncate} and {@link LogStore#truncated}.
	 * @return whether it removes entries
	 */
	protected abstract boolean hasRetention();

	@BeforeEach
	void takeTheLeadersLease() {
		heartbeat(LEADER);
		heartbeat(SUCCESSOR);
		this.leader = acquire(LEADER);
	}

	@Test
	void appendsTakeConsecutiveIndexesFromOneUnderTheLeadersTerm() {
		for (long index = 1; index <= 5; index++) {
			Appended appended = log().append(this.leader, LEADER, "set", "p" + index);
			assertThat(appended.entry()).as("append %d", index)
				.isEqualTo(new Bookmark(GROUP, this.leader.term(), index));
		}
		assertThat(log().read(GROUP, 0, 10)).extracting(LogEntry::index).containsExactly(1L, 2L, 3L, 4L, 5L);
	}

	@Test
	void entriesKeepTheirGroupTermTypePayloadAndAppendTime() {
		Instant before = Instant.now().minus(Duration.ofMinutes(1));
		log().append(this.leader, LEADER, "set", "{\"a\": 1}\nsecond line");
		log().append(this.leader, LEADER, "delete", "");
		Instant after = Instant.now().plus(Duration.ofMinutes(1));
		List<LogEntry> entries = log().read(GROUP, 0, 10);
		assertThat(entries)
			.extracting(LogEntry::group, LogEntry::index, LogEntry::term, LogEntry::type, LogEntry::payload)
			.containsExactly(tuple(GROUP, 1L, this.leader.term(), "set", "{\"a\": 1}\nsecond line"),
					tuple(GROUP, 2L, this.leader.term(), "delete", ""));
		assertThat(entries).extracting(LogEntry::appendedAt)
			.as("appended within a minute of this clock")
			.allSatisfy((at) -> assertThat(at).isBetween(before, after));
		assertThat(entries.get(1).appendedAt()).isAfterOrEqualTo(entries.get(0).appendedAt());
	}

	@Test
	void appendByANodeThatDoesNotHoldTheLeaseIsRefusedWithTheHolderAndTerm() {
		Appended refused = log().append(this.leader, SUCCESSOR, "set", "x");
		assertThat(refused).isEqualTo(new Appended(null, LEADER, this.leader.term()));
		assertThat(log().head(GROUP)).isEqualTo(START);
		assertThat(log().read(GROUP, 0, 10)).isEmpty();
	}

	@Test
	void appendUnderATermThatDoesNotHoldTheLeaseIsRefused() {
		Appended refused = log().append(new FencingToken(GROUP, this.leader.term() + 1), LEADER, "set", "x");
		assertThat(refused.entry()).isNull();
		assertThat(refused.holder()).isEqualTo(LEADER);
		assertThat(refused.currentTerm()).isEqualTo(this.leader.term());
		assertThat(log().head(GROUP)).isEqualTo(START);
	}

	@Test
	void appendToAGroupWhoseLeaseNobodyEverHeldIsRefused() {
		Appended refused = log().append(new FencingToken("unheld", this.leader.term()), LEADER, "set", "x");
		assertThat(refused.entry()).isNull();
		assertThat(refused.holder()).isNull();
		assertThat(log().head("unheld")).isEqualTo(new Bookmark("unheld", 0, 0));
	}

	@Test
	void deposedLeaderIsRefusedOnceAnotherNodeTookTheLeaseOverAndItsEntriesFollowOn() {
		log().append(this.leader, LEADER, "set", "first");
		FencingToken successor = takeOver();
		Appended stale = log().append(this.leader, LEADER, "set", "stale");
		assertThat(stale).isEqualTo(new Appended(null, SUCCESSOR, successor.term()));
		assertThat(log().append(successor, SUCCESSOR, "set", "second").entry())
			.isEqualTo(new Bookmark(GROUP, successor.term(), 2));
		assertThat(log().read(GROUP, 0, 10)).extracting(LogEntry::term, LogEntry::payload)
			.containsExactly(tuple(this.leader.term(), "first"), tuple(successor.term(), "second"));
	}

	@Test
	void entryOfALowerTermIsNeverAppendedAfterOneOfAHigherTerm() {
		FencingToken successor = takeOver();
		log().append(successor, SUCCESSOR, "set", "higher");
		// Nobody holds the lease now: only the log's last term stands against the old
		// token.
		assertThat(coordination().release(SUCCESSOR, Map.of(GROUP, successor.term()))).containsExactly(GROUP);
		Appended lower = log().append(this.leader, LEADER, "set", "lower");
		assertThat(lower.entry()).isNull();
		assertThat(lower.currentTerm()).as("the highest term seen").isGreaterThanOrEqualTo(successor.term());
		assertThat(log().head(GROUP)).isEqualTo(new Bookmark(GROUP, successor.term(), 1));
		assertThat(log().appendable(GROUP).lowestTerm()).isGreaterThanOrEqualTo(successor.term());
	}

	@Test
	void readReturnsTheEntriesAfterAnIndexInOrderUpToTheLimit() {
		List<Bookmark> appended = appendEntries(5);
		assertThat(log().read(GROUP, 0, 2)).extracting(LogEntry::bookmark)
			.containsExactlyElementsOf(appended.subList(0, 2));
		assertThat(log().read(GROUP, 2, 2)).extracting(LogEntry::bookmark)
			.containsExactlyElementsOf(appended.subList(2, 4));
		assertThat(log().read(GROUP, 1, 100)).extracting(LogEntry::payload).containsExactly("p2", "p3", "p4", "p5");
	}

	@Test
	void readReturnsFewerThanTheLimitOnlyAtTheEndOfTheLog() {
		appendEntries(3);
		assertThat(log().read(GROUP, 0, 3)).hasSize(3);
		assertThat(log().read(GROUP, 2, 3)).extracting(LogEntry::index).containsExactly(3L);
		assertThat(log().read(GROUP, 3, 3)).isEmpty();
		assertThat(log().read(GROUP, 7, 3)).isEmpty();
		assertThat(log().read("empty", 0, 3)).isEmpty();
	}

	@Test
	void logsOfTwoGroupsAreIndexedApart() {
		heartbeat(LEADER);
		FencingToken other = acquire("other", LEADER);
		log().append(this.leader, LEADER, "set", "a");
		log().append(other, LEADER, "set", "b");
		log().append(this.leader, LEADER, "set", "c");
		assertThat(log().read(GROUP, 0, 10)).extracting(LogEntry::index, LogEntry::payload)
			.containsExactly(tuple(1L, "a"), tuple(2L, "c"));
		assertThat(log().read("other", 0, 10)).extracting(LogEntry::group, LogEntry::index, LogEntry::payload)
			.containsExactly(tuple("other", 1L, "b"));
		assertThat(log().head("other")).isEqualTo(new Bookmark("other", other.term(), 1));
	}

	@Test
	void headIsTheStartOfTheLogUntilAnEntryIsAppendedThenTheLastEntry() {
		assertThat(log().head(GROUP)).isEqualTo(START);
		assertThat(log().appendable(GROUP).end()).isEqualTo(START);
		List<Bookmark> appended = appendEntries(3);
		assertThat(log().head(GROUP)).isEqualTo(appended.get(2));
		LogStore.Appendable appendable = log().appendable(GROUP);
		assertThat(appendable.end()).isEqualTo(appended.get(2));
		assertThat(appendable.lowestTerm()).isEqualTo(this.leader.term());
	}

	@Test
	void listenerIsToldOfACommittedAppend() throws Exception {
		Set<Long> heard = ConcurrentHashMap.newKeySet();
		List<String> groups = new CopyOnWriteArrayList<>();
		try (AutoCloseable listening = log().listen(new LogStore.LogListener() {

			@Override
			public void appended(String group, long index) {
				groups.add(group);
				heard.add(index);
			}

			@Override
			public void confirmed(Bookmark end, long sentAt) {
			}

		})) {
			Bookmark first = log().append(this.leader, LEADER, "set", "a").entry();
			assertThat(first).isNotNull();
			await().atMost(WAIT).untilAsserted(() -> assertThat(heard).contains(1L));
			log().append(this.leader, LEADER, "set", "b");
			await().atMost(WAIT).untilAsserted(() -> assertThat(heard).contains(2L));
		}
		assertThat(groups).containsOnly(GROUP);
		assertThat(heard).containsOnly(1L, 2L);
	}

	@Test
	void refusedAppendIsNotAnnounced() throws Exception {
		List<Long> heard = new CopyOnWriteArrayList<>();
		try (AutoCloseable listening = log().listen(new LogStore.LogListener() {

			@Override
			public void appended(String group, long index) {
				heard.add(index);
			}

			@Override
			public void confirmed(Bookmark end, long sentAt) {
			}

		})) {
			assertThat(log().append(this.leader, SUCCESSOR, "set", "refused").entry()).isNull();
			log().append(this.leader, LEADER, "set", "accepted");
			await().atMost(WAIT).untilAsserted(() -> assertThat(heard).contains(1L));
		}
		assertThat(heard).containsOnly(1L);
	}

	/**
	 * Threads of the leader append at once: every append gets an index of its own, and
	 * the log holds exactly the appended entries at indexes 1 to their number, in order.
	 */
	@Test
	void concurrentAppendsOfTheLeaderTakeDistinctConsecutiveIndexes() throws Exception {
		int threads = 4;
		int perThread = 15;
		Map<Long, String> byIndex = new ConcurrentHashMap<>();
		ExecutorService executor = Executors.newFixedThreadPool(threads);
		try {
			CyclicBarrier start = new CyclicBarrier(threads);
			List<Future<?>> appenders = new ArrayList<>();
			for (int thread = 0; thread < threads; thread++) {
				String name = "t" + thread;
				appenders.add(executor.submit(() -> {
					start.await(10, TimeUnit.SECONDS);
					for (int i = 0; i < perThread; i++) {
						String payload = name + "-" + i;
						Bookmark entry = log().append(this.leader, LEADER, "set", payload).entry();
						assertThat(entry).as(payload).isNotNull();
						assertThat(byIndex.putIfAbsent(entry.index(), payload))
							.as("index %d given twice", entry.index())
							.isNull();
					}
					return null;
				}));
			}
			for (Future<?> appender : appenders) {
				appender.get(120, TimeUnit.SECONDS);
			}
		}
		finally {
			executor.shutdownNow();
		}
		int total = threads * perThread;
		assertThat(byIndex.keySet())
			.containsExactlyInAnyOrderElementsOf(LongStream.rangeClosed(1, total).boxed().toList());
		List<LogEntry> entries = log().read(GROUP, 0, total + 10);
		assertThat(entries).extracting(LogEntry::index)
			.containsExactlyElementsOf(LongStream.rangeClosed(1, total).boxed().toList());
		assertThat(entries).allSatisfy((entry) -> assertThat(entry.payload()).isEqualTo(byIndex.get(entry.index())));
		assertThat(log().head(GROUP)).isEqualTo(new Bookmark(GROUP, this.leader.term(), total));
	}

	@Test
	void storeDeclaresRetentionExactlyWhenItsSubclassSaysItHasIt() {
		assertThat(log().supportsRetention()).isEqualTo(hasRetention());
	}

	@Test
	void storeWithoutRetentionRefusesToTruncateAndHasTruncatedNothing() {
		assumeFalse(hasRetention(), "the store has retention: see the truncation tests");
		List<Bookmark> appended = appendEntries(3);
		assertThatExceptionOfType(UnsupportedOperationException.class)
			.isThrownBy(() -> log().truncate(this.leader, LEADER, 1, null, appended.get(2), 10));
		assertThat(log().truncated(GROUP)).isEqualTo(START);
		assertThat(log().read(GROUP, 0, 10)).hasSize(3);
	}

	@Test
	void truncationRemovesTheOldestEntriesBeyondThoseKeptAndRecordsTheLastRemoved() {
		assumeTrue(hasRetention(), "the store keeps every entry: see the test of a store without retention");
		List<Bookmark> appended = appendEntries(5);
		assertThat(log().truncated(GROUP)).isEqualTo(START);
		LogStore.Truncated truncated = log().truncate(this.leader, LEADER, 2, null, appended.get(4), 100);
		assertThat(truncated).isEqualTo(new LogStore.Truncated(true, 3, appended.get(2)));
		assertThat(log().truncated(GROUP)).isEqualTo(appended.get(2));
		assertThat(log().read(GROUP, 3, 10)).extracting(LogEntry::bookmark)
			.containsExactlyElementsOf(appended.subList(3, 5));
		assertThat(log().head(GROUP)).isEqualTo(appended.get(4));
	}

	@Test
	void truncationStopsAtTheLimitAtWhatWasAppliedAndBeforeTheLastEntry() {
		assumeTrue(hasRetention(), "the store keeps every entry: see the test of a store without retention");
		List<Bookmark> appended = appendEntries(5);
		assertThat(log().truncate(this.leader, LEADER, 0, null, appended.get(4), 1).removed()).as("limit").isEqualTo(1);
		assertThat(log().truncate(this.leader, LEADER, 0, null, appended.get(2), 100).removed()).as("applied")
			.isEqualTo(2);
		assertThat(log().truncate(this.leader, LEADER, 0, null, appended.get(4), 100).removed()).as("last entry")
			.isEqualTo(1);
		assertThat(log().truncated(GROUP)).isEqualTo(appended.get(3));
		assertThat(log().read(GROUP, 4, 10)).extracting(LogEntry::bookmark).containsExactly(appended.get(4));
	}

	@Test
	void truncationByAgeRemovesTheEntriesOlderThanTheAgeButNeverTheLast() {
		assumeTrue(hasRetention(), "the store keeps every entry: see the test of a store without retention");
		List<Bookmark> appended = appendEntries(3);
		assertThat(log().truncate(this.leader, LEADER, Long.MAX_VALUE, Duration.ofDays(36500), appended.get(2), 100))
			.as("none that old")
			.isEqualTo(new LogStore.Truncated(true, 0, null));
		AtomicInteger removed = new AtomicInteger();
		await().atMost(WAIT)
			.until(() -> removed.addAndGet(
					log().truncate(this.leader, LEADER, Long.MAX_VALUE, Duration.ofMillis(1), appended.get(2), 100)
						.removed()) >= 2);
		assertThat(removed).hasValue(2);
		assertThat(log().truncated(GROUP)).isEqualTo(appended.get(1));
		assertThat(log().read(GROUP, 2, 10)).extracting(LogEntry::bookmark).containsExactly(appended.get(2));
	}

	@Test
	void truncationRemovesNothingForADeposedLeaderOrAnAppliedEntryOfAnotherTerm() {
		assumeTrue(hasRetention(), "the store keeps every entry: see the test of a store without retention");
		List<Bookmark> appended = appendEntries(3);
		Bookmark otherTerm = new Bookmark(GROUP, this.leader.term() + 1, 3);
		assertThat(log().truncate(this.leader, LEADER, 0, null, otherTerm, 100))
			.isEqualTo(new LogStore.Truncated(true, 0, null));
		takeOver();
		assertThat(log().truncate(this.leader, LEADER, 0, null, appended.get(2), 100))
			.isEqualTo(new LogStore.Truncated(false, 0, null));
		assertThat(log().truncated(GROUP)).isEqualTo(START);
		assertThat(log().read(GROUP, 0, 10)).hasSize(3);
	}

	private List<Bookmark> appendEntries(int count) {
		List<Bookmark> appended = new ArrayList<>();
		for (int i = 1; i <= count; i++) {
			Bookmark entry = log().append(this.leader, LEADER, "set", "p" + i).entry();
			assertThat(entry).as("append %d", i).isNotNull();
			appended.add(entry);
		}
		return appended;
	}

	/**
	 * Releases the leader's lease and has the successor take it.
	 * @return the successor's token
	 */
	private FencingToken takeOver() {
		assertThat(coordination().release(LEADER, Map.of(GROUP, this.leader.term()))).containsExactly(GROUP);
		FencingToken successor = acquire(SUCCESSOR);
		assertThat(successor.term()).isGreaterThan(this.leader.term());
		return successor;
	}

	private FencingToken acquire(String node) {
		return acquire(GROUP, node);
	}

	// Of a node registered by heartbeat().
	private FencingToken acquire(String group, String node) {
		CoordinationStore.AcquireResult result = coordination().acquire(group, registration(node), LEASE);
		assertThat(result.granted()).as("%s acquires %s", node, group).isTrue();
		return new FencingToken(group, result.lease().term());
	}

	private void heartbeat(String node) {
		coordination().tick(registration(node), Map.of(), List.of(), LEASE, EXPIRY);
	}

	private static NodeRegistration registration(String node) {
		return new NodeRegistration(node, node, "host", 1);
	}

	private LogStore log() {
		return stores().log();
	}

	private CoordinationStore coordination() {
		return stores().coordination();
	}

	/**
	 * The stores of one test, on one coordinator.
	 *
	 * @param coordination the coordination store, which the suite registers nodes and
	 * takes leases with
	 * @param log the log store under test
	 */
	public record Stores(CoordinationStore coordination, LogStore log) {
	}

}
