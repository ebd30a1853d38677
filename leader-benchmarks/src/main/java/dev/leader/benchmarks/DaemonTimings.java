package dev.leader.benchmarks;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.daemon.DaemonSettings;
import dev.leader.lease.LeaseSettings;
import dev.leader.test.DaemonTestNode;
import dev.leader.test.NodeProcess;

import static org.awaitility.Awaitility.await;

/**
 * Daemons on a cluster of {@link DaemonTestNode} processes (a {@code LeaderEngine} and a
 * {@code DaemonCoordinator} each, on a Hikari pool, no Spring context), every node able
 * to run every daemon, default settings. Each agent makes one fenced write into
 * {@code daemon_writes} when it starts and then idles, so the agents add no load of their
 * own.
 * <p>
 * Measures the idle load of the balanced cluster, as {@link IdleLoad} does, and then,
 * round after round, the time from {@code kill -9} of a node that runs daemons (never the
 * leader, so that the figure is the reassignment alone) to each of its daemons' first
 * fenced write on another node, on the database clock. The killed node is replaced by a
 * fresh one and the cluster rebalanced before the next round.
 */
final class DaemonTimings {

	private static final Duration TIMEOUT = Duration.ofMinutes(2);

	private static final String GROUP = DaemonSettings.defaults().group();

	private final BenchDatabase database;

	private final BenchNodes nodes;

	DaemonTimings(BenchDatabase database, Path logs) {
		this.database = database;
		this.nodes = new BenchNodes(logs, "daemon-node-");
	}

	/**
	 * Measures one cluster.
	 * @param nodeCount the number of nodes
	 * @param daemonCount the number of daemons
	 * @param warmUp how long to let the balanced cluster idle before measuring the load
	 * @param window the length of one load window
	 * @param windows how many load windows
	 * @param rounds how many kills
	 * @return the result
	 */
	Result measure(int nodeCount, int daemonCount, Duration warmUp, Duration window, int windows, int rounds)
			throws Exception {
		this.database.reset();
		execute("TRUNCATE " + BenchDatabase.PREFIX.value() + "assignments",
				"DROP TABLE IF EXISTS " + DaemonTestNode.WRITES_TABLE);
		try (HikariDataSource dataSource = this.database.dataSource("bench-writes", 1)) {
			DaemonTestNode.createWritesTable(dataSource);
		}
		String daemons = IntStream.rangeClosed(1, daemonCount)
			.mapToObj((i) -> "daemon-" + i)
			.collect(Collectors.joining(","));
		BenchNodes.Launcher launcher = (nodeId, log) -> NodeProcess.start(DaemonTestNode.class, nodeId,
				arguments(daemons), Map.of(), log);
		try {
			this.nodes.startAll(nodeCount, launcher, TIMEOUT);
			awaitBalanced(daemonCount);
			sleep(warmUp);
			LoadWindows load = LoadWindows.measure(this.database, window, windows);
			List<Double> perDaemon = new ArrayList<>();
			List<Double> perNode = new ArrayList<>();
			for (int round = 0; round < rounds; round++) {
				String leader = query("SELECT holder FROM " + BenchDatabase.PREFIX.value()
						+ "leases WHERE group_name = '" + GROUP + "'")
					.get(0);
				Map<String, Long> lost = new TreeMap<>();
				String victim = assignments().entrySet()
					.stream()
					.filter((entry) -> !entry.getValue().node().equals(leader))
					.collect(Collectors.groupingBy((entry) -> entry.getValue().node(), Collectors.counting()))
					.entrySet()
					.stream()
					.max(Map.Entry.comparingByValue())
					.orElseThrow(() -> new IllegalStateException("No node but the leader runs daemons"))
					.getKey();
				assignments().forEach((daemon, assignment) -> {
					if (assignment.node().equals(victim)) {
						lost.put(daemon, assignment.generation());
					}
				});
				NodeProcess killed = this.nodes.node(victim);
				killed.kill9();
				Instant killedAt = databaseNow();
				double slowest = 0;
				for (Map.Entry<String, Long> entry : lost.entrySet()) {
					Instant resumed = awaitFirstWriteAbove(entry.getKey(), entry.getValue());
					double gap = Duration.between(killedAt, resumed).toNanos() / 1e6;
					perDaemon.add(gap);
					slowest = Math.max(slowest, gap);
				}
				perNode.add(slowest);
				this.nodes.replace(killed, launcher, TIMEOUT);
				awaitBalanced(daemonCount);
			}
			return new Result(nodeCount, daemonCount, load, Stats.of(perDaemon), Stats.of(perNode));
		}
		finally {
			this.nodes.closeAll();
		}
	}

	private List<String> arguments(String daemons) {
		List<String> arguments = new ArrayList<>(
				LeadershipTimings.nodeArguments(this.database, LeaseSettings.defaults()));
		arguments.add("--groups=" + GROUP);
		arguments.add("--daemons=" + daemons);
		// One write when an agent starts, which marks it running, and none after.
		arguments.add("--write-interval=PT1H");
		return arguments;
	}

	/**
	 * Waits until every daemon is ACTIVE on a running node and the loads of the running
	 * nodes differ by one at most.
	 * @param daemonCount the number of daemons
	 */
	private void awaitBalanced(int daemonCount) {
		await().atMost(TIMEOUT).pollInterval(Duration.ofMillis(200)).until(() -> {
			Map<String, Assignment> assignments = assignments();
			Map<String, Integer> loads = new LinkedHashMap<>();
			this.nodes.all().forEach((node) -> loads.put(node.nodeId(), 0));
			for (Assignment assignment : assignments.values()) {
				if (!assignment.state().equals("ACTIVE") || !loads.containsKey(assignment.node())) {
					return false;
				}
				loads.merge(assignment.node(), 1, Integer::sum);
			}
			int max = loads.values().stream().mapToInt(Integer::intValue).max().orElse(0);
			int min = loads.values().stream().mapToInt(Integer::intValue).min().orElse(0);
			return assignments.size() == daemonCount && max - min <= 1;
		});
	}

	private Instant awaitFirstWriteAbove(String daemon, long generation) {
		return await().atMost(TIMEOUT)
			.pollInterval(Duration.ofMillis(20))
			.until(() -> firstWriteAbove(daemon, generation), Optional::isPresent)
			.orElseThrow();
	}

	private Optional<Instant> firstWriteAbove(String daemon, long generation) throws SQLException {
		try (Connection connection = this.database.connect();
				Statement statement = connection.createStatement();
				ResultSet row = statement.executeQuery("SELECT min(written_at) FROM daemon_writes WHERE kind = 'W' "
						+ "AND daemon = '" + daemon + "' AND generation > " + generation)) {
			row.next();
			Timestamp at = row.getTimestamp(1);
			return Optional.ofNullable(at).map(Timestamp::toInstant);
		}
	}

	private Map<String, Assignment> assignments() throws SQLException {
		Map<String, Assignment> assignments = new TreeMap<>();
		try (Connection connection = this.database.connect();
				Statement statement = connection.createStatement();
				ResultSet rows = statement.executeQuery("SELECT daemon_name, node_id, state, generation FROM "
						+ BenchDatabase.PREFIX.value() + "assignments WHERE state <> 'DELETED'")) {
			while (rows.next()) {
				assignments.put(rows.getString(1),
						new Assignment(rows.getString(2), rows.getString(3), rows.getLong(4)));
			}
		}
		return assignments;
	}

	private Instant databaseNow() throws SQLException {
		try (Connection connection = this.database.connect();
				Statement statement = connection.createStatement();
				ResultSet row = statement.executeQuery("SELECT clock_timestamp()")) {
			row.next();
			return row.getTimestamp(1).toInstant();
		}
	}

	private List<String> query(String sql) throws SQLException {
		List<String> values = new ArrayList<>();
		try (Connection connection = this.database.connect();
				Statement statement = connection.createStatement();
				ResultSet rows = statement.executeQuery(sql)) {
			while (rows.next()) {
				values.add(rows.getString(1));
			}
		}
		return values;
	}

	private void execute(String... sql) throws SQLException {
		try (Connection connection = this.database.connect(); Statement statement = connection.createStatement()) {
			for (String each : sql) {
				statement.execute(each);
			}
		}
	}

	/**
	 * Lets the cluster idle while the server counts; a measuring window, never a
	 * synchronisation.
	 * @param duration how long to idle
	 */
	private static void sleep(Duration duration) throws InterruptedException {
		TimeUnit.NANOSECONDS.sleep(duration.toNanos());
	}

	private record Assignment(String node, String state, long generation) {
	}

	/**
	 * One cluster's figures.
	 *
	 * @param nodes the number of nodes
	 * @param daemons the number of daemons
	 * @param load the idle load of the balanced cluster, before the kills
	 * @param perDaemon for each daemon of a killed node, kill to its first fenced write
	 * elsewhere, in milliseconds
	 * @param perNode for each killed node, kill to the last of its daemons' first writes
	 * elsewhere, in milliseconds
	 */
	record Result(int nodes, int daemons, LoadWindows load, Stats perDaemon, Stats perNode) {
	}

}
