package dev.leader.postgres;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.leader.FencingToken;
import dev.leader.jdbc.TablePrefix;
import dev.leader.log.Bookmark;
import dev.leader.log.DecisionLog;
import dev.leader.log.LogEntry;
import dev.leader.log.LogStore;
import dev.leader.log.LogStore.Appended;
import dev.leader.log.RecordingApplier;
import dev.leader.node.NodeRegistration;
import dev.leader.postgres.AppendBatches.Entry;
import dev.leader.test.Grants;
import dev.leader.test.MigratedSchema;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

/**
 * Tests for {@link PostgresLogStore} with what the node's heartbeat reads: the last index
 * of each group's log comes with the group's lease, so that a node that hears no
 * notification still catches up within a renew interval, without a statement of its own.
 */
class PostgresLogStoreTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	private static final Duration TIMEOUT = Duration.ofSeconds(10);

	@RegisterExtension
	final MigratedSchema schema = new MigratedSchema(8);

	private PostgresCoordinationStore leaderStore;

	@BeforeEach
	void createLeaderStore() {
		this.leaderStore = new PostgresCoordinationStore(this.schema.dataSource(), PREFIX, Duration.ofSeconds(5));
	}

	@AfterEach
	void disconnectLeaderStore() {
		this.leaderStore.disconnect();
	}

	@Test
	void heartbeatOfANodeThatHearsNoNotificationCatchesItsLogUpAndBoundsItsStaleness() throws Exception {
		long term = Grants.acquire(this.leaderStore, "g", "a", Duration.ofSeconds(30)).lease().term();
		FencingToken token = new FencingToken("g", term);
		DecisionLog leader = new DecisionLog(store(this.leaderStore), "a", List.of());
		PostgresCoordinationStore deafStore = new PostgresCoordinationStore(this.schema.dataSource(), PREFIX,
				Duration.ofSeconds(5), Notifications.off());
		RecordingApplier recorder = new RecordingApplier("g");
		List<LogEntry> applied = recorder.entries();
		DecisionLog deaf = new DecisionLog(store(deafStore), "b", List.of(recorder));
		try {
			deaf.start();
			await().atMost(TIMEOUT).until(() -> deaf.staleness("g").isPresent());
			Bookmark last = null;
			for (int i = 0; i < 3; i++) {
				last = leader.append(token, "set", "p" + i);
			}
			assertThat(deaf.awaitApplied(new Bookmark("g", 0, 0), TIMEOUT)).isTrue();
			assertThat(applied).as("applied before a heartbeat").isEmpty();
			NodeRegistration node = new NodeRegistration("b", "app", "host-b", 2);
			deafStore.tick(node, Map.of(), List.of("g"), Duration.ofSeconds(30), Duration.ofSeconds(10));
			Bookmark expected = last;
			await().atMost(TIMEOUT).until(() -> deaf.applied("g").equals(expected));
			assertThat(applied).extracting(LogEntry::payload).containsExactly("p0", "p1", "p2");
			Duration afterTick = deaf.staleness("g").orElseThrow();
			deafStore.tick(node, Map.of(), List.of("g"), Duration.ofSeconds(30), Duration.ofSeconds(10));
			assertThat(deaf.staleness("g").orElseThrow()).as("an idle log's staleness, after the next heartbeat")
				.isLessThan(afterTick.plusMillis(1));
		}
		finally {
			deaf.stop();
			deafStore.disconnect();
		}
	}

	@Test
	void aBatchTakesConsecutiveIndexesInOneTransactionAndIsAnnouncedOnce() throws Exception {
		long term = Grants.acquire(this.leaderStore, "g", "a", Duration.ofSeconds(30)).lease().term();
		FencingToken token = new FencingToken("g", term);
		PostgresLogStore store = store(this.leaderStore);
		List<String> announced = new CopyOnWriteArrayList<>();
		try (AutoCloseable listening = this.leaderStore.subscribe(PREFIX.channel("appended"), announced::add)) {
			assertThat(store.append(token, "a", "set", "first").entry()).isEqualTo(new Bookmark("g", term, 1));
			List<Appended> batch = store.appendBatch(token, "a",
					List.of(new Entry("set", "x"), new Entry("set", "y"), new Entry("other", "z")));
			assertThat(batch).extracting(Appended::entry)
				.containsExactly(new Bookmark("g", term, 2), new Bookmark("g", term, 3), new Bookmark("g", term, 4));
			await().atMost(TIMEOUT).until(() -> announced.contains("g 4"));
			await().during(Duration.ofMillis(300)).atMost(TIMEOUT).until(() -> announced.size() == 2);
			assertThat(announced).containsExactly("g 1", "g 4");
		}
		List<LogEntry> entries = store.read("g", 0, 10);
		assertThat(entries).extracting(LogEntry::type, LogEntry::payload)
			.containsExactly(tuple("set", "first"), tuple("set", "x"), tuple("set", "y"), tuple("other", "z"));
		assertThat(entries.subList(1, 4)).extracting(LogEntry::appendedAt)
			.as("one transaction's time")
			.containsOnly(entries.get(1).appendedAt());
		assertThat(store.head("g")).isEqualTo(new Bookmark("g", term, 4));
	}

	@Test
	void aBatchUnderATermThatDoesNotHoldTheLeaseWritesNothing() {
		long term = Grants.acquire(this.leaderStore, "g", "a", Duration.ofSeconds(30)).lease().term();
		PostgresLogStore store = store(this.leaderStore);
		List<Appended> batch = store.appendBatch(new FencingToken("g", term + 1), "a",
				List.of(new Entry("set", "x"), new Entry("set", "y")));
		assertThat(batch).containsExactly(new Appended(null, "a", term), new Appended(null, "a", term));
		assertThat(store.read("g", 0, 10)).isEmpty();
		assertThat(store.head("g")).isEqualTo(new Bookmark("g", 0, 0));
	}

	@Test
	void truncationWithTheLongestAgeLimitStillRemovesWhatTheCountLimitDrops() {
		long term = Grants.acquire(this.leaderStore, "g", "a", Duration.ofSeconds(30)).lease().term();
		FencingToken token = new FencingToken("g", term);
		PostgresLogStore store = store(this.leaderStore);
		store.appendBatch(token, "a", List.of(new Entry("set", "1"), new Entry("set", "2"), new Entry("set", "3"),
				new Entry("set", "4"), new Entry("set", "5")));
		// The clock minus 100 years is a timestamp PostgreSQL can hold.
		LogStore.Truncated truncated = store.truncate(token, "a", 2, Duration.ofDays(36500), new Bookmark("g", term, 5),
				1000);
		assertThat(truncated.removed()).isEqualTo(3);
		assertThat(store.truncated("g")).isEqualTo(new Bookmark("g", term, 3));
	}

	private PostgresLogStore store(PostgresCoordinationStore notifications) {
		return new PostgresLogStore(this.schema.dataSource(), PREFIX, Duration.ofSeconds(5), Duration.ofSeconds(10),
				notifications);
	}

}
