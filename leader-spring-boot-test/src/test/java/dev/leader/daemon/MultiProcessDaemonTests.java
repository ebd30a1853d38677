package dev.leader.daemon;

import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.Predicate;
import java.util.stream.Collectors;

import dev.leader.lease.LeaseSettings;
import dev.leader.test.Cluster;
import dev.leader.test.DaemonTestNode;
import dev.leader.test.NodeProcess;
import dev.leader.test.TestNode;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.simple.JdbcClient;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Daemon assignment across real processes: every node is a JVM of its own
 * ({@link DaemonTestNode}) on one PostgreSQL schema, killed or stopped for real. Every
 * agent records its fenced writes, and every test ends with the {@link #assertExclusive()
 * exclusivity check} over them (G4).
 */
class MultiProcessDaemonTests {

	private static final LeaseSettings FAST = new LeaseSettings(Duration.ofSeconds(2), Duration.ofMillis(500),
			Duration.ofMillis(500), Duration.ofMillis(300), Duration.ofSeconds(3), Duration.ofSeconds(3));

	private static final Duration ACK_TIMEOUT = Duration.ofSeconds(2);

	private static final Duration DRAIN_TIMEOUT = Duration.ofSeconds(2);

	private static final Duration SETTLE = Duration.ofSeconds(1);

	private static final String SEVEN = "d1,d2,d3,d4,d5,d6,d7";

	private static final Duration STARTUP = Duration.ofSeconds(20);

	private static final Duration BALANCE_TIMEOUT = Duration.ofSeconds(20);

	/**
	 * The nodes take part in a group of their own besides the daemons group, so that a
	 * node started without a coordinator never leads the daemons group.
	 */
	@RegisterExtension
	final Cluster cluster = TestNode.cluster(FAST, "aux");

	private JdbcClient jdbc;

	@BeforeEach
	void createWritesTable() {
		this.jdbc = JdbcClient.create(this.cluster.dataSource());
		DaemonTestNode.createWritesTable(this.cluster.dataSource());
	}

	@Test
	void joiningNodeTakesItsShareOfSevenDaemonsEndingThreeTwoTwoWithNoDaemonOnTwoNodesAtOnce() {
		start("node-a", SEVEN);
		start("node-b", SEVEN);
		awaitReady("node-a", "node-b");
		awaitActiveLoads(List.of(4, 3));
		Map<String, Assignment> before = assignments();
		start("node-c", SEVEN);
		awaitReady("node-c");
		Map<String, Integer> loads = awaitActiveLoads(List.of(3, 2, 2));
		assertThat(loads).containsEntry("node-c", 2);
		Map<String, Assignment> after = assignments();
		List<String> moved = after.values()
			.stream()
			.filter((assignment) -> assignment.node().equals("node-c"))
			.map(Assignment::daemon)
			.toList();
		for (String daemon : moved) {
			assertThat(after.get(daemon).generation()).isGreaterThan(before.get(daemon).generation());
			awaitWrite(daemon, after.get(daemon).generation(), "node-c");
		}
		assertExclusive();
	}

	@Test
	void daemonsOfANodeKilledWithSigkillRunElsewhereWithinNodeExpiryPlusAFewSeconds() {
		start("node-a", SEVEN);
		start("node-b", SEVEN);
		start("node-c", SEVEN);
		awaitReady("node-a", "node-b", "node-c");
		awaitActiveLoads(List.of(3, 2, 2));
		String victim = this.jdbc.sql("SELECT holder FROM leader_leases WHERE group_name = 'default'")
			.query(String.class)
			.single();
		Map<String, Long> lost = assignments().values()
			.stream()
			.filter((assignment) -> assignment.node().equals(victim))
			.collect(Collectors.toMap(Assignment::daemon, Assignment::generation));
		node(victim).kill9();
		Instant killedAt = databaseNow();
		Duration limit = FAST.nodeExpiry().plusSeconds(4);
		Duration slowest = Duration.ZERO;
		for (Map.Entry<String, Long> entry : lost.entrySet()) {
			Instant resumed = awaitFirstWriteAbove(entry.getKey(), entry.getValue(), limit.plusSeconds(2));
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
		awaitActiveLoads(List.of(4, 3));
		assertExclusive();
	}

	@Test
	void assignmentThatIsNeverAcknowledgedMovesToAnotherNodeAfterTheAckTimeout() {
		// "mute" sorts before "node-a", so it wins the tie for the first assignment; it
		// advertises the daemon but runs no coordinator, so it never acknowledges.
		this.cluster.start("mute", DaemonTestNode.class, Map.of("daemons", "solo", "coordinator", "false"), Map.of());
		awaitReady("mute");
		await().atMost(STARTUP)
			.until(() -> this.jdbc
				.sql("SELECT count(*) FROM leader_nodes WHERE node_id = 'mute' AND 'solo' = ANY(daemons)")
				.query(Long.class)
				.single() == 1);
		start("node-a", "solo");
		Assignment first = awaitAssignment("solo", (assignment) -> assignment.node().equals("mute"), STARTUP);
		assertThat(first.state()).isEqualTo(AssignmentState.ASSIGNING);
		Assignment moved = awaitAssignment("solo",
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
		awaitWrite("solo", moved.generation(), "node-a");
		assertThat(writes("SELECT count(*) FROM daemon_writes WHERE node = 'mute'")).isZero();
		assertExclusive();
	}

	@Test
	void agentThatIgnoresCancellationIsForcedAfterTheDrainTimeoutAndItsLateWritesAreRejected() {
		start("node-a", "other,stubborn", Map.of("stubborn", "stubborn"));
		awaitReady("node-a");
		awaitActiveLoads(List.of(2));
		long generation = assignments().get("stubborn").generation();
		// node-b can run only the stubborn daemon, so rebalancing 2/0 must revoke that
		// one.
		start("node-b", "stubborn");
		Assignment revoking = awaitAssignment("stubborn",
				(assignment) -> assignment.state() == AssignmentState.REVOKING, STARTUP);
		Assignment moved = awaitAssignment("stubborn",
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
		awaitWrite("stubborn", moved.generation(), "node-b");
		await().atMost(Duration.ofSeconds(5))
			.until(() -> writes("SELECT count(*) FROM daemon_writes WHERE daemon = 'stubborn' AND node = 'node-a' "
					+ "AND kind = 'R' AND generation = " + generation) >= 2);
		assertThat(writes("SELECT count(*) FROM daemon_writes WHERE daemon = 'stubborn' AND kind = 'W' "
				+ "AND generation = " + generation + " AND written_at >= '" + reassignedAt + "'"))
			.as("writes of the old generation committed after the reassignment")
			.isZero();
		assertExclusive();
	}

	@Test
	void gracefulStopHandsDaemonsOverWithoutWaitingForTheNodeExpiry() {
		start("node-a", "d1,d2,d3,d4");
		start("node-b", "d1,d2,d3,d4");
		awaitReady("node-a", "node-b");
		awaitActiveLoads(List.of(2, 2));
		String leader = this.jdbc.sql("SELECT holder FROM leader_leases WHERE group_name = 'default'")
			.query(String.class)
			.single();
		String stopping = leader.equals("node-a") ? "node-b" : "node-a";
		Map<String, Long> handedOver = assignments().values()
			.stream()
			.filter((assignment) -> assignment.node().equals(stopping))
			.collect(Collectors.toMap(Assignment::daemon, Assignment::generation));
		NodeProcess stopped = node(stopping);
		Instant stoppedAt = databaseNow();
		stopped.sigterm();
		Duration slowest = Duration.ZERO;
		for (Map.Entry<String, Long> entry : handedOver.entrySet()) {
			Instant resumed = awaitFirstWriteAbove(entry.getKey(), entry.getValue(), FAST.nodeExpiry());
			Duration gap = Duration.between(stoppedAt, resumed);
			slowest = (gap.compareTo(slowest) > 0) ? gap : slowest;
		}
		System.out.printf("Daemons %s of %s ran elsewhere %d ms after SIGTERM (node expiry %d ms)%n",
				handedOver.keySet(), stopping, slowest.toMillis(), FAST.nodeExpiry().toMillis());
		assertThat(handedOver).isNotEmpty();
		assertThat(slowest).isLessThan(FAST.nodeExpiry());
		assertThat(stopped.awaitExit(Duration.ofSeconds(10))).as("exit code after SIGTERM").isEqualTo(143);
		awaitActiveLoads(List.of(4));
		// Handed straight to the other node: the stopping node was never given its
		// daemons back.
		Map<String, Assignment> after = assignments();
		handedOver.forEach((daemon, generation) -> {
			assertThat(after.get(daemon).node()).isNotEqualTo(stopping);
			assertThat(after.get(daemon).generation()).as(daemon).isEqualTo(generation + 1);
		});
		assertExclusive();
	}

	private void start(String nodeId, String daemons) {
		start(nodeId, daemons, Map.of());
	}

	private void start(String nodeId, String daemons, Map<String, String> more) {
		Map<String, String> properties = new LinkedHashMap<>(Map.of("daemons", daemons, "ack-timeout",
				ACK_TIMEOUT.toString(), "drain-timeout", DRAIN_TIMEOUT.toString(), "settle", SETTLE.toString()));
		properties.putAll(more);
		this.cluster.start(nodeId, DaemonTestNode.class, properties, Map.of());
	}

	private void awaitReady(String... nodeIds) {
		for (String nodeId : nodeIds) {
			node(nodeId).awaitReady(STARTUP);
		}
	}

	private NodeProcess node(String nodeId) {
		return this.cluster.nodes()
			.stream()
			.filter((node) -> node.nodeId().equals(nodeId) && node.isAlive())
			.findFirst()
			.orElseThrow(() -> new IllegalArgumentException("No running node " + nodeId));
	}

	/**
	 * Waits until every daemon is ACTIVE and the numbers of daemons per node, in
	 * descending order, are the given ones.
	 */
	private Map<String, Integer> awaitActiveLoads(List<Integer> expected) {
		try {
			return await().atMost(BALANCE_TIMEOUT).pollInterval(Duration.ofMillis(100)).until(() -> {
				Map<String, Integer> loads = new TreeMap<>();
				for (Assignment assignment : assignments().values()) {
					if (assignment.state() != AssignmentState.ACTIVE) {
						return null;
					}
					loads.merge(assignment.node(), 1, Integer::sum);
				}
				return loads;
			}, (loads) -> loads != null
					&& loads.values().stream().sorted(Comparator.reverseOrder()).toList().equals(expected));
		}
		catch (ConditionTimeoutException ex) {
			throw new AssertionError(
					"Loads did not become " + expected + ": " + assignments().values() + "\n" + describeNodes(), ex);
		}
	}

	private Assignment awaitAssignment(String daemon, Predicate<Assignment> condition, Duration timeout) {
		try {
			return await().atMost(timeout)
				.pollInterval(Duration.ofMillis(20))
				.until(() -> Optional.ofNullable(assignments().get(daemon)).filter(condition), Optional::isPresent)
				.orElseThrow();
		}
		catch (ConditionTimeoutException ex) {
			throw new AssertionError(
					"Assignment of " + daemon + " never matched: " + assignments().get(daemon) + "\n" + describeNodes(),
					ex);
		}
	}

	private void awaitWrite(String daemon, long generation, String node) {
		await().atMost(Duration.ofSeconds(5))
			.until(() -> writes("SELECT count(*) FROM daemon_writes WHERE kind = 'W' AND daemon = '" + daemon
					+ "' AND generation = " + generation + " AND node = '" + node + "'") > 0);
	}

	private Instant awaitFirstWriteAbove(String daemon, long generation, Duration timeout) {
		try {
			return await().atMost(timeout)
				.pollInterval(Duration.ofMillis(20))
				.until(() -> this.jdbc.sql("""
						SELECT min(written_at) FROM daemon_writes WHERE kind = 'W' AND daemon = ? AND generation > ?
						""").params(daemon, generation).query(Timestamp.class).optional().map(Timestamp::toInstant),
						Optional::isPresent)
				.orElseThrow();
		}
		catch (ConditionTimeoutException ex) {
			throw new AssertionError("Daemon " + daemon + " did not run with a generation above " + generation
					+ " within " + timeout + ": " + assignments().get(daemon) + "\n" + describeNodes(), ex);
		}
	}

	private Map<String, Assignment> assignments() {
		Map<String, Assignment> assignments = new TreeMap<>();
		this.jdbc.sql("SELECT daemon_name, node_id, state, generation, term, state_since FROM leader_assignments")
			.query((row, i) -> new Assignment(row.getString(1), row.getString(2),
					AssignmentState.valueOf(row.getString(3)), row.getLong(4), row.getLong(5),
					row.getTimestamp(6).toInstant()))
			.list()
			.forEach((assignment) -> assignments.put(assignment.daemon(), assignment));
		return assignments;
	}

	private long writes(String countSql) {
		return this.jdbc.sql(countSql).query(Long.class).single();
	}

	private Instant databaseNow() {
		return this.jdbc.sql("SELECT clock_timestamp()").query(Timestamp.class).single().toInstant();
	}

	private String describeNodes() {
		StringBuilder description = new StringBuilder();
		this.cluster.nodes().forEach((node) -> description.append(node.describe()));
		return description.toString();
	}

	/**
	 * The exclusivity check (G4) over every committed fenced write: per daemon, the
	 * writes of each generation come from one node, the windows of the generations (first
	 * to last write, in database time) never overlap, and generations never decrease over
	 * time.
	 */
	private void assertExclusive() {
		List<Window> windows = this.jdbc.sql("""
				SELECT daemon, generation, count(DISTINCT node), min(node), min(written_at), max(written_at), count(*)
				FROM daemon_writes WHERE kind = 'W' GROUP BY daemon, generation ORDER BY daemon, min(written_at)
				""")
			.query((row, i) -> new Window(row.getString(1), row.getLong(2), row.getInt(3), row.getString(4),
					row.getTimestamp(5).toInstant(), row.getTimestamp(6).toInstant(), row.getLong(7)))
			.list();
		assertThat(windows).as("recorded windows").isNotEmpty();
		for (int i = 0; i < windows.size(); i++) {
			Window window = windows.get(i);
			assertThat(window.nodes()).as("nodes writing %s", window).isEqualTo(1);
			if (i > 0 && windows.get(i - 1).daemon().equals(window.daemon())) {
				Window previous = windows.get(i - 1);
				assertThat(window.generation()).as("generation after %s", previous)
					.isGreaterThan(previous.generation());
				assertThat(window.first()).as("%s begins after %s ends", window, previous).isAfter(previous.last());
			}
		}
		System.out.printf("Exclusivity check: %d writes in %d generation windows of %d daemons, no overlap%n",
				windows.stream().mapToLong(Window::writes).sum(), windows.size(),
				windows.stream().map(Window::daemon).distinct().count());
	}

	private record Window(String daemon, long generation, int nodes, String node, Instant first, Instant last,
			long writes) {
	}

}
