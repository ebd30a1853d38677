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

import dev.leader.test.Cluster;
import dev.leader.test.DaemonTestNode;
import dev.leader.test.NodeProcess;
import org.awaitility.core.ConditionTimeoutException;

import org.springframework.jdbc.core.simple.JdbcClient;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Daemon nodes of a test's {@link Cluster}, each a {@link DaemonTestNode} process, and
 * what the tests read and check of them: the assignments, the agents' fenced writes, and
 * the {@link #assertExclusive() exclusivity check} over those writes (G4).
 */
final class DaemonCluster {

	private static final Duration STARTUP = Duration.ofSeconds(20);

	private static final Duration BALANCE_TIMEOUT = Duration.ofSeconds(20);

	private final Cluster cluster;

	private final Map<String, String> defaults;

	private final JdbcClient jdbc;

	/**
	 * Creates the table of the agents' writes in the cluster's database.
	 * @param cluster the cluster
	 * @param defaults the arguments of every node started, besides its daemons
	 */
	DaemonCluster(Cluster cluster, Map<String, String> defaults) {
		this.cluster = cluster;
		this.defaults = Map.copyOf(defaults);
		this.jdbc = JdbcClient.create(cluster.dataSource());
		DaemonTestNode.createWritesTable(cluster.dataSource());
	}

	void start(String nodeId, String daemons) {
		start(nodeId, daemons, Map.of());
	}

	void start(String nodeId, String daemons, Map<String, String> more) {
		Map<String, String> properties = new LinkedHashMap<>(this.defaults);
		properties.put("daemons", daemons);
		properties.putAll(more);
		this.cluster.start(nodeId, DaemonTestNode.class, properties, Map.of());
	}

	void awaitReady(String... nodeIds) {
		for (String nodeId : nodeIds) {
			node(nodeId).awaitReady(STARTUP);
		}
	}

	NodeProcess node(String nodeId) {
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
	Map<String, Integer> awaitActiveLoads(List<Integer> expected) {
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

	Assignment awaitAssignment(String daemon, Predicate<Assignment> condition, Duration timeout) {
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

	void awaitWrite(String daemon, long generation, String node) {
		await().atMost(Duration.ofSeconds(5))
			.until(() -> writes("SELECT count(*) FROM daemon_writes WHERE kind = 'W' AND daemon = '" + daemon
					+ "' AND generation = " + generation + " AND node = '" + node + "'") > 0);
	}

	Instant awaitFirstWriteAbove(String daemon, long generation, Duration timeout) {
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

	Map<String, Assignment> assignments() {
		Map<String, Assignment> assignments = new TreeMap<>();
		this.jdbc.sql("SELECT daemon_name, node_id, state, generation, term, state_since FROM leader_assignments")
			.query((row, i) -> new Assignment(row.getString(1), row.getString(2),
					AssignmentState.valueOf(row.getString(3)), row.getLong(4), row.getLong(5),
					row.getTimestamp(6).toInstant()))
			.list()
			.forEach((assignment) -> assignments.put(assignment.daemon(), assignment));
		return assignments;
	}

	long writes(String countSql) {
		return this.jdbc.sql(countSql).query(Long.class).single();
	}

	Instant databaseNow() {
		// The default of written_at on both servers, so that the two compare.
		return this.jdbc.sql("SELECT CURRENT_TIMESTAMP(6)").query(Timestamp.class).single().toInstant();
	}

	String describeNodes() {
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
	void assertExclusive() {
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
