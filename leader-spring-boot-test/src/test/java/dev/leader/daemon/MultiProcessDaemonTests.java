package dev.leader.daemon;

import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import dev.leader.lease.LeaseSettings;
import dev.leader.test.Cluster;
import dev.leader.test.DaemonTestNode;
import dev.leader.test.NodeProcess;
import dev.leader.test.TestNode;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.simple.JdbcClient;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Daemon assignment across real processes: every node is a JVM of its own
 * ({@link DaemonTestNode}) on one PostgreSQL schema, killed or stopped for real. Every
 * agent records its fenced writes, and every test ends with the
 * {@link #this.daemons.assertExclusive() exclusivity check} over them (G4).
 */
class MultiProcessDaemonTests {

	private static final LeaseSettings FAST = new LeaseSettings(Duration.ofSeconds(2), Duration.ofMillis(500),
			Duration.ofMillis(500), Duration.ofMillis(300), Duration.ofSeconds(3), Duration.ofSeconds(3));

	private static final Duration ACK_TIMEOUT = Duration.ofSeconds(2);

	private static final Duration DRAIN_TIMEOUT = Duration.ofSeconds(2);

	private static final Duration SETTLE = Duration.ofSeconds(1);

	private static final String SEVEN = "d1,d2,d3,d4,d5,d6,d7";

	private static final Duration STARTUP = Duration.ofSeconds(20);

	/**
	 * The nodes take part in a group of their own besides the daemons group, so that a
	 * node started without a coordinator never leads the daemons group.
	 */
	@RegisterExtension
	final Cluster cluster = TestNode.cluster(FAST, "aux");

	private JdbcClient jdbc;

	private DaemonCluster daemons;

	@BeforeEach
	void createWritesTable() {
		this.jdbc = JdbcClient.create(this.cluster.dataSource());
		this.daemons = new DaemonCluster(this.cluster, Map.of("ack-timeout", ACK_TIMEOUT.toString(), "drain-timeout",
				DRAIN_TIMEOUT.toString(), "settle", SETTLE.toString()));
	}

	@Test
	void joiningNodeTakesItsShareOfSevenDaemonsEndingThreeTwoTwoWithNoDaemonOnTwoNodesAtOnce() {
		this.daemons.start("node-a", SEVEN);
		this.daemons.start("node-b", SEVEN);
		this.daemons.awaitReady("node-a", "node-b");
		this.daemons.awaitActiveLoads(List.of(4, 3));
		Map<String, Assignment> before = this.daemons.assignments();
		this.daemons.start("node-c", SEVEN);
		this.daemons.awaitReady("node-c");
		Map<String, Integer> loads = this.daemons.awaitActiveLoads(List.of(3, 2, 2));
		assertThat(loads).containsEntry("node-c", 2);
		Map<String, Assignment> after = this.daemons.assignments();
		List<String> moved = after.values()
			.stream()
			.filter((assignment) -> assignment.node().equals("node-c"))
			.map(Assignment::daemon)
			.toList();
		for (String daemon : moved) {
			assertThat(after.get(daemon).generation()).isGreaterThan(before.get(daemon).generation());
			this.daemons.awaitWrite(daemon, after.get(daemon).generation(), "node-c");
		}
		this.daemons.assertExclusive();
	}

	@Test
	void daemonsOfANodeKilledWithSigkillRunElsewhereWithinNodeExpiryPlusAFewSeconds() {
		this.daemons.start("node-a", SEVEN);
		this.daemons.start("node-b", SEVEN);
		this.daemons.start("node-c", SEVEN);
		this.daemons.awaitReady("node-a", "node-b", "node-c");
		this.daemons.awaitActiveLoads(List.of(3, 2, 2));
		String victim = this.jdbc.sql("SELECT holder FROM leader_leases WHERE group_name = 'default'")
			.query(String.class)
			.single();
		Map<String, Long> lost = this.daemons.assignments()
			.values()
			.stream()
			.filter((assignment) -> assignment.node().equals(victim))
			.collect(Collectors.toMap(Assignment::daemon, Assignment::generation));
		this.daemons.node(victim).kill9();
		Instant killedAt = this.daemons.databaseNow();
		Duration limit = FAST.nodeExpiry().plusSeconds(4);
		Duration slowest = Duration.ZERO;
		for (Map.Entry<String, Long> entry : lost.entrySet()) {
			Instant resumed = this.daemons.awaitFirstWriteAbove(entry.getKey(), entry.getValue(), limit.plusSeconds(2));
			Duration gap = Duration.between(killedAt, resumed);
			slowest = (gap.compareTo(slowest) > 0) ? gap : slowest;
		}
		System.out.printf(
				"Daemons %s of %s (the leader) ran elsewhere %d ms after kill -9 (node expiry %d ms, "
						+ "lease %d ms, renew %d ms)%n",
				lost.keySet(), victim, slowest.toMillis(), FAST.nodeExpiry().toMillis(), FAST.duration().toMillis(),
				FAST.renewInterval().toMillis());
		assertThat(lost).isNotEmpty();
		assertThat(slowest).isLessThan(limit);
		this.daemons.awaitActiveLoads(List.of(4, 3));
		this.daemons.assertExclusive();
	}

	@Test
	void assignmentThatIsNeverAcknowledgedMovesToAnotherNodeAfterTheAckTimeout() {
		// "mute" sorts before "node-a", so it wins the tie for the first assignment; it
		// advertises the daemon but runs no coordinator, so it never acknowledges.
		this.cluster.start("mute", DaemonTestNode.class, Map.of("daemons", "solo", "coordinator", "false"), Map.of());
		this.daemons.awaitReady("mute");
		await().atMost(STARTUP)
			.until(() -> this.jdbc
				.sql("SELECT count(*) FROM leader_nodes WHERE node_id = 'mute' AND 'solo' = ANY(daemons)")
				.query(Long.class)
				.single() == 1);
		this.daemons.start("node-a", "solo");
		Assignment first = this.daemons.awaitAssignment("solo", (assignment) -> assignment.node().equals("mute"),
				STARTUP);
		assertThat(first.state()).isEqualTo(AssignmentState.ASSIGNING);
		Assignment moved = this.daemons.awaitAssignment("solo",
				(assignment) -> assignment.node().equals("node-a") && assignment.state() == AssignmentState.ACTIVE,
				ACK_TIMEOUT.plusSeconds(5));
		Instant reassignedAt = this.jdbc.sql("SELECT assigned_at FROM leader_assignments WHERE daemon_name = 'solo'")
			.query(Timestamp.class)
			.single()
			.toInstant();
		System.out.printf("Unacknowledged assignment moved %d ms after it was made (ack timeout %d ms)%n",
				Duration.between(first.since(), reassignedAt).toMillis(), ACK_TIMEOUT.toMillis());
		assertThat(Duration.between(first.since(), reassignedAt)).isGreaterThanOrEqualTo(ACK_TIMEOUT);
		assertThat(moved.generation()).isEqualTo(first.generation() + 1);
		this.daemons.awaitWrite("solo", moved.generation(), "node-a");
		assertThat(this.daemons.writes("SELECT count(*) FROM daemon_writes WHERE node = 'mute'")).isZero();
		this.daemons.assertExclusive();
	}

	@Test
	void agentThatIgnoresCancellationIsForcedAfterTheDrainTimeoutAndItsLateWritesAreRejected() {
		this.daemons.start("node-a", "other,stubborn", Map.of("stubborn", "stubborn"));
		this.daemons.awaitReady("node-a");
		this.daemons.awaitActiveLoads(List.of(2));
		long generation = this.daemons.assignments().get("stubborn").generation();
		// node-b can run only the stubborn daemon, so rebalancing 2/0 must revoke that
		// one.
		this.daemons.start("node-b", "stubborn");
		Assignment revoking = this.daemons.awaitAssignment("stubborn",
				(assignment) -> assignment.state() == AssignmentState.REVOKING, STARTUP);
		Assignment moved = this.daemons.awaitAssignment("stubborn",
				(assignment) -> assignment.node().equals("node-b") && assignment.state() == AssignmentState.ACTIVE,
				DRAIN_TIMEOUT.plusSeconds(5));
		Instant reassignedAt = this.jdbc
			.sql("SELECT assigned_at FROM leader_assignments WHERE daemon_name = 'stubborn'")
			.query(Timestamp.class)
			.single()
			.toInstant();
		assertThat(Duration.between(revoking.since(), reassignedAt)).as("revoked until reassigned")
			.isGreaterThanOrEqualTo(DRAIN_TIMEOUT);
		assertThat(moved.generation()).isEqualTo(generation + 1);
		this.daemons.awaitWrite("stubborn", moved.generation(), "node-b");
		await().atMost(Duration.ofSeconds(5))
			.until(() -> this.daemons
				.writes("SELECT count(*) FROM daemon_writes WHERE daemon = 'stubborn' AND node = 'node-a' "
						+ "AND kind = 'R' AND generation = " + generation) >= 2);
		assertThat(this.daemons.writes("SELECT count(*) FROM daemon_writes WHERE daemon = 'stubborn' AND kind = 'W' "
				+ "AND generation = " + generation + " AND written_at >= '" + reassignedAt + "'"))
			.as("writes of the old generation committed after the reassignment")
			.isZero();
		this.daemons.assertExclusive();
	}

	@Test
	void gracefulStopHandsDaemonsOverWithoutWaitingForTheNodeExpiry() {
		this.daemons.start("node-a", "d1,d2,d3,d4");
		this.daemons.start("node-b", "d1,d2,d3,d4");
		this.daemons.awaitReady("node-a", "node-b");
		this.daemons.awaitActiveLoads(List.of(2, 2));
		String leader = this.jdbc.sql("SELECT holder FROM leader_leases WHERE group_name = 'default'")
			.query(String.class)
			.single();
		String stopping = leader.equals("node-a") ? "node-b" : "node-a";
		Map<String, Long> handedOver = this.daemons.assignments()
			.values()
			.stream()
			.filter((assignment) -> assignment.node().equals(stopping))
			.collect(Collectors.toMap(Assignment::daemon, Assignment::generation));
		NodeProcess stopped = this.daemons.node(stopping);
		Instant stoppedAt = this.daemons.databaseNow();
		stopped.sigterm();
		Duration slowest = Duration.ZERO;
		for (Map.Entry<String, Long> entry : handedOver.entrySet()) {
			Instant resumed = this.daemons.awaitFirstWriteAbove(entry.getKey(), entry.getValue(), FAST.nodeExpiry());
			Duration gap = Duration.between(stoppedAt, resumed);
			slowest = (gap.compareTo(slowest) > 0) ? gap : slowest;
		}
		System.out.printf("Daemons %s of %s ran elsewhere %d ms after SIGTERM (node expiry %d ms)%n",
				handedOver.keySet(), stopping, slowest.toMillis(), FAST.nodeExpiry().toMillis());
		assertThat(handedOver).isNotEmpty();
		assertThat(slowest).isLessThan(FAST.nodeExpiry());
		assertThat(stopped.awaitExit(Duration.ofSeconds(10))).as("exit code after SIGTERM").isEqualTo(143);
		this.daemons.awaitActiveLoads(List.of(4));
		// Handed straight to the other node: the stopping node was never given its
		// daemons back.
		Map<String, Assignment> after = this.daemons.assignments();
		handedOver.forEach((daemon, generation) -> {
			assertThat(after.get(daemon).node()).isNotEqualTo(stopping);
			assertThat(after.get(daemon).generation()).as(daemon).isEqualTo(generation + 1);
		});
		this.daemons.assertExclusive();
	}

}
