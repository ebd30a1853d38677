package dev.leader.log;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.FencingToken;
import dev.leader.actuate.DecisionLogHealthIndicator;
import dev.leader.jdbc.LeaderSchemaMigration;
import dev.leader.jdbc.PostgresCoordinationStore;
import dev.leader.jdbc.PostgresLogStore;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.CoordinationStore.AcquireResult;
import dev.leader.test.ReplicatedPostgres;
import dev.leader.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;

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
	 * Appends three entries that the standby receives, then two that only the primary and
	 * the follower have, crashes the primary and promotes the standby.
	 */
	private History loseTwoEntriesAppliedBy(RecordingApplier onB) throws Exception {
		this.servers.replicateSynchronously(true);
		FencingToken first = acquire();
		DecisionLog a = start("a", new RecordingApplier(GROUP));
		DecisionLog b = start("b", onB);
		for (int i = 1; i <= 3; i++) {
			a.append(first, "set", "kept-" + i);
		}
		this.servers.replicateSynchronously(false);
		this.servers.standby().orElseThrow().stopStreaming();
		a.append(first, "set", "lost-4");
		Bookmark lost = a.append(first, "set", "lost-5");
		assertThat(b.awaitApplied(lost, TIMEOUT)).as("applied before the failover").isTrue();
		assertThat(payloads(onB)).containsExactly("kept-1", "kept-2", "kept-3", "lost-4", "lost-5");
		this.servers.failover();
		// Before the new leader appends anything, the follower serves no read that holds
		// the lost entries.
		await().atMost(TIMEOUT)
			.untilAsserted(() -> assertThatExceptionOfType(IllegalStateException.class)
				.isThrownBy(() -> b.awaitApplied(lost, Duration.ofSeconds(1))));
		assertThatExceptionOfType(IllegalStateException.class)
			.isThrownBy(() -> b.awaitApplied(new Bookmark(GROUP, first.term(), 2), Duration.ofSeconds(1)));
		assertThatExceptionOfType(IllegalStateException.class)
			.isThrownBy(() -> b.awaitReadIndex(GROUP, Duration.ofSeconds(1)));
		return new History(a, b, first, lost);
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
		catch (LogDivergedException ex) {
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
			.until(() -> leases.acquire(GROUP, "a", Duration.ofSeconds(30)), AcquireResult::granted);
		return new FencingToken(GROUP, result.lease().term());
	}

	private DecisionLog start(String node, LogApplier applier) {
		DecisionLog log = new DecisionLog(
				new PostgresLogStore(this.dataSource, PREFIX, Duration.ofSeconds(5), Duration.ofSeconds(10), store()),
				node, List.of(applier));
		log.start();
		this.logs.add(log);
		return log;
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

	private record History(DecisionLog leader, DecisionLog follower, FencingToken first, Bookmark lost) {
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
