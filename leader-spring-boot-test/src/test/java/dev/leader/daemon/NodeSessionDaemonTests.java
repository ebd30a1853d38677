package dev.leader.daemon;

import java.nio.file.Files;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import dev.leader.lease.LeaseSettings;
import dev.leader.test.Cluster;
import dev.leader.test.NodeProcess;
import dev.leader.test.TestNode;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.simple.JdbcClient;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Node death by session: the daemons group ({@code default}) is a crash-takeover group
 * ({@code leader.lease.crash-takeover-groups}), so every node binds itself to its
 * database session, and its daemons move the moment that session ends rather than when
 * its heartbeat expires. Three {@code DaemonTestNode} processes with the default timing
 * (a 10 s node expiry), so that only the session can explain a move within a few seconds;
 * every test ends with the exclusivity check over the agents' fenced writes (G4).
 */
class NodeSessionDaemonTests {

	static final LeaseSettings SETTINGS = LeaseSettings.defaults();

	private static final String SIX = "d1,d2,d3,d4,d5,d6";

	/**
	 * Half the earliest move a heartbeat's expiry could explain (its last heartbeat at
	 * most a renew interval before the death, so at least 7 s with the defaults): room
	 * for the session's end, the leader's cycle, the acknowledgement and the first write
	 * on a loaded 2-core machine, while a move this fast still proves the session.
	 */
	private static final Duration FAST_MOVE = SETTINGS.nodeExpiry().minus(SETTINGS.renewInterval()).dividedBy(2);

	@RegisterExtension
	final Cluster cluster = cluster();

	JdbcClient jdbc;

	private DaemonCluster daemons;

	Cluster cluster() {
		return TestNode.cluster(SETTINGS, "aux").withProperty("crash-takeover", "default");
	}

	/**
	 * Returns the statement that ends the session a node is bound to.
	 * @param nodeId the node
	 * @return the statement
	 */
	String terminateNodeSessionSql(String nodeId) {
		return "SELECT pg_terminate_backend(session_pid) FROM leader_nodes WHERE node_id = '" + nodeId + "'";
	}

	/**
	 * Ends the session a node is bound to, from the database's side.
	 * @param nodeId the node
	 */
	void terminateNodeSession(String nodeId) {
		this.jdbc.sql(terminateNodeSessionSql(nodeId)).query().listOfRows();
	}

	/**
	 * Returns the statement that counts the nodes bound to a session.
	 * @return the statement
	 */
	String boundNodesSql() {
		return "SELECT count(*) FROM leader_nodes WHERE session_pid IS NOT NULL";
	}

	@BeforeEach
	void startThreeNodes() {
		this.jdbc = JdbcClient.create(this.cluster.dataSource());
		this.daemons = new DaemonCluster(this.cluster,
				Map.of("ack-timeout", "PT10S", "drain-timeout", "PT5S", "settle", "PT1S"));
		this.daemons.start("node-a", SIX);
		this.daemons.start("node-b", SIX);
		this.daemons.start("node-c", SIX);
		this.daemons.awaitReady("node-a", "node-b", "node-c");
		this.daemons.awaitActiveLoads(List.of(2, 2, 2));
		await().atMost(Duration.ofSeconds(10))
			.until(() -> this.jdbc.sql(boundNodesSql()).query(Long.class).single() == 3);
		// Each node learns the next bound node's session from its own heartbeat: one
		// renew interval after the last binding, every node watches the next one.
		await().pollDelay(SETTINGS.renewInterval().plusMillis(500))
			.atMost(SETTINGS.renewInterval().plusSeconds(5))
			.until(() -> this.jdbc.sql(boundNodesSql()).query(Long.class).single() == 3);
	}

	@Test
	void daemonsOfAFollowerKilledWithSigkillRunElsewhereWithinSecondsOfTheKill() {
		Duration slowest = killAndAwaitMoves(follower());
		assertThat(slowest).isLessThan(FAST_MOVE);
		this.daemons.assertExclusive();
	}

	@Test
	void daemonsOfTheLeaderKilledWithSigkillRunElsewhereWithinSecondsOfTheKill() {
		Duration slowest = killAndAwaitMoves(leader());
		assertThat(slowest).isLessThan(FAST_MOVE);
		this.daemons.assertExclusive();
	}

	@Test
	void daemonsOfAStoppedNodeWaitForItsHeartbeatToExpire() {
		String victim = follower();
		Map<String, Long> lost = daemonsOf(victim);
		NodeProcess stopped = this.daemons.node(victim);
		Instant stoppedAt = this.daemons.databaseNow();
		stopped.sigstop();
		try {
			Duration slowest = awaitMoves(lost, stoppedAt, SETTINGS.nodeExpiry().plusSeconds(10));
			System.out.printf("Daemons %s of %s ran elsewhere %d ms after SIGSTOP (node expiry %d ms)%n", lost.keySet(),
					victim, slowest.toMillis(), SETTINGS.nodeExpiry().toMillis());
			// Its last heartbeat was at most a renew interval before the stop.
			assertThat(slowest).isGreaterThan(SETTINGS.nodeExpiry().minus(SETTINGS.renewInterval()));
		}
		finally {
			stopped.sigcont();
		}
		this.daemons.assertExclusive();
	}

	@Test
	void nodeWhoseSessionIsTerminatedStopsItsDaemonsAtOnceAndTheyMove() throws Exception {
		String victim = follower();
		Map<String, Long> lost = daemonsOf(victim);
		Instant terminatedAt = this.daemons.databaseNow();
		terminateNodeSession(victim);
		Duration slowest = awaitMoves(lost, terminatedAt, FAST_MOVE.plusSeconds(5));
		System.out.printf("Daemons %s of %s ran under a new generation %d ms after its session was terminated%n",
				lost.keySet(), victim, slowest.toMillis());
		assertThat(slowest).isLessThan(FAST_MOVE);
		NodeProcess node = this.daemons.node(victim);
		await().atMost(Duration.ofSeconds(5))
			.until(() -> Files.readString(node.stderr()).contains("reason=SESSION_LOST"));
		// It binds its next session.
		await().atMost(SETTINGS.renewInterval().plusSeconds(5))
			.until(() -> this.jdbc.sql(boundNodesSql()).query(Long.class).single() == 3);
		this.daemons.assertExclusive();
	}

	private Duration killAndAwaitMoves(String victim) {
		Map<String, Long> lost = daemonsOf(victim);
		Instant killedAt = this.daemons.databaseNow();
		this.daemons.node(victim).kill9();
		Duration slowest = awaitMoves(lost, killedAt, FAST_MOVE.plusSeconds(5));
		System.out.printf("Daemons %s of %s ran elsewhere %d ms after kill -9 (node expiry %d ms)%n", lost.keySet(),
				victim, slowest.toMillis(), SETTINGS.nodeExpiry().toMillis());
		return slowest;
	}

	private Duration awaitMoves(Map<String, Long> lost, Instant from, Duration timeout) {
		assertThat(lost).isNotEmpty();
		Duration slowest = Duration.ZERO;
		for (Map.Entry<String, Long> entry : lost.entrySet()) {
			Instant resumed = this.daemons.awaitFirstWriteAbove(entry.getKey(), entry.getValue(), timeout);
			Duration gap = Duration.between(from, resumed);
			slowest = (gap.compareTo(slowest) > 0) ? gap : slowest;
		}
		return slowest;
	}

	private Map<String, Long> daemonsOf(String node) {
		return this.daemons.assignments()
			.values()
			.stream()
			.filter((assignment) -> assignment.node().equals(node))
			.collect(Collectors.toMap(Assignment::daemon, Assignment::generation));
	}

	private String leader() {
		return this.jdbc.sql("SELECT holder FROM leader_leases WHERE group_name = 'default'")
			.query(String.class)
			.single();
	}

	private String follower() {
		String leader = leader();
		return leader.equals("node-a") ? "node-b" : "node-a";
	}

}
