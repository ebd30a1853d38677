package dev.leader.log;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import dev.leader.FencingToken;
import dev.leader.jdbc.MariaDbCoordinationStore;
import dev.leader.jdbc.MariaDbLogStore;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.CoordinationStore.AcquireResult;
import dev.leader.node.NodeRegistration;
import dev.leader.test.MigratedMariaDb;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.simple.JdbcClient;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Review finding on MariaDB, which has no epoch: a failover to a replica that missed the
 * last appends keeps the leader's term, so the leader appends other entries at the lost
 * indexes under the same term, and the follower's check of the previous entry's term
 * passes. The failover is simulated by leaving the rows exactly as the promoted replica
 * holds them (entries 4 and 5 and their head update never reached it); the lease row is
 * the replica's, still held by the same node under the same term.
 */
class MariaDbLogDivergenceReviewTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	private static final Duration TIMEOUT = Duration.ofSeconds(20);

	@RegisterExtension
	static final MigratedMariaDb database = new MigratedMariaDb(12);

	private final List<ScheduledExecutorService> heartbeats = new ArrayList<>();

	private final List<DecisionLog> logs = new ArrayList<>();

	@AfterEach
	void stop() throws InterruptedException {
		this.logs.forEach(DecisionLog::stop);
		for (ScheduledExecutorService ticks : this.heartbeats) {
			ticks.shutdownNow();
			assertThat(ticks.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
		}
	}

	@Test
	void followerNeverAppliesOnTopOfEntriesThatAFailoverLostUnderTheSameTerm() throws Exception {
		MariaDbCoordinationStore leases = new MariaDbCoordinationStore(database.dataSource(), PREFIX,
				Duration.ofSeconds(5));
		AcquireResult granted = leases.acquire("g", "a", Duration.ofSeconds(30));
		assertThat(granted.granted()).isTrue();
		FencingToken token = new FencingToken("g", granted.lease().term());
		DecisionLog a = start("a", new RecordingApplier("g"), false);
		RecordingApplier onB = new RecordingApplier("g");
		DecisionLog b = start("b", onB, true);
		for (int i = 1; i <= 3; i++) {
			a.append(token, "set", "kept-" + i);
		}
		a.append(token, "set", "lost-4");
		Bookmark lost = a.append(token, "set", "lost-5");
		assertThat(b.awaitApplied(lost, TIMEOUT)).isTrue();
		// The promoted replica's rows: entries 4 and 5 never reached it.
		JdbcClient jdbc = JdbcClient.create(database.dataSource());
		jdbc.sql("DELETE FROM leader_log_entries WHERE group_name = 'g' AND log_index > 3").update();
		jdbc.sql("UPDATE leader_log_heads SET last_index = 3 WHERE group_name = 'g'").update();
		// The leader still holds its lease, under the same term (no epoch), and appends.
		a.append(token, "set", "new-4");
		a.append(token, "set", "new-5");
		Bookmark new6 = a.append(token, "set", "new-6");
		await().atMost(TIMEOUT).until(() -> b.failure("g").isPresent() || b.applied("g").index() >= new6.index());
		if (b.failure("g").isEmpty()) {
			assertThat(b.awaitReadIndex("g", TIMEOUT)).isTrue();
			assertThat(onB.entries().stream().map(LogEntry::payload).toList())
				.as("the state a read index serves on the follower")
				.containsExactly("kept-1", "kept-2", "kept-3", "new-4", "new-5", "new-6");
		}
	}

	private DecisionLog start(String node, LogApplier applier, boolean followed) {
		DecisionLog log = new DecisionLog(new MariaDbLogStore(database.dataSource(), PREFIX, Duration.ofSeconds(5),
				Duration.ofSeconds(10), followed ? heartbeat(node) : null), node, List.of(applier));
		log.start();
		this.logs.add(log);
		return log;
	}

	// A heartbeat of the node's own every 100 ms, as the engine's would be.
	private MariaDbCoordinationStore heartbeat(String node) {
		MariaDbCoordinationStore store = new MariaDbCoordinationStore(database.dataSource(), PREFIX,
				Duration.ofSeconds(5));
		NodeRegistration registration = new NodeRegistration("tail-" + node, "app", "host-" + node, 1);
		ScheduledExecutorService ticks = Executors.newSingleThreadScheduledExecutor();
		ticks.scheduleWithFixedDelay(() -> {
			try {
				store.tick(registration, Map.of(), List.of("g"), Duration.ofSeconds(30), Duration.ofSeconds(10));
			}
			catch (RuntimeException ex) {
				// the next heartbeat tries again
			}
		}, 0, 100, TimeUnit.MILLISECONDS);
		this.heartbeats.add(ticks);
		return store;
	}

}
