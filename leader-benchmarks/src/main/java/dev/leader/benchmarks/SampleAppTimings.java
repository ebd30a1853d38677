package dev.leader.benchmarks;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import org.jspecify.annotations.Nullable;

/**
 * Hand-over and idle load of three nodes of the sample application, each a Spring Boot
 * application in a JVM of its own ({@link SampleAppNode}), with the sample's own jobs
 * paused, so that only leadership and daemon assignment touch the database. The
 * bare-engine figures of {@link LeadershipTimings} and {@link IdleLoad} leave out what a
 * Spring Boot application adds: its shutdown hook and lifecycle phases, the daemon
 * coordinator, the connection pool's validation, the actuator.
 * <p>
 * A hand-over is timed on the database clock: from the signal, as the harness reads the
 * database clock ({@code clock_timestamp()}, or on MariaDB the expression the starter's
 * stores use) just before it sends SIGTERM to the leader of {@code billing}, to the
 * {@code acquired_at} of the successor's lease. The steps in between come from the
 * {@code TIMING} lines the nodes print on the machine's monotonic clock. A failover is
 * timed the same way, from kill -9 of that leader.
 */
final class SampleAppTimings {

	private static final String GROUP = "billing";

	private static final List<String> GROUPS = List.of("default", GROUP);

	private static final int DAEMONS = 2;

	private static final long START_TIMEOUT_SECONDS = 180;

	private final BenchDatabase database;

	private final Path logs;

	private final Path jar;

	private final List<SampleAppNode> nodes = new CopyOnWriteArrayList<>();

	private int started;

	SampleAppTimings(BenchDatabase database, Path logs, Path jar) {
		this.database = database;
		this.logs = logs;
		this.jar = jar;
		// The nodes do not watch the harness: if it is stopped, it stops them first, so
		// that none outlives it.
		Runtime.getRuntime()
			.addShutdownHook(new Thread(() -> this.nodes.forEach(SampleAppNode::kill), "sample-nodes-shutdown"));
	}

	BenchDatabase.Dialect dialect() {
		return this.database.dialect();
	}

	/**
	 * SIGTERM to the leader of {@code billing}, then a new node in its place, round after
	 * round.
	 * @param arguments further arguments of every node
	 * @param daemons whether the nodes run the sample's daemons
	 * @param rounds how many hand-overs
	 * @param settle how long the cluster idles before each round, once it is complete
	 * @return every round
	 */
	List<Round> handOver(List<String> arguments, boolean daemons, int rounds, Duration settle) throws Exception {
		List<Round> results = new ArrayList<>();
		try (Connection connection = this.database.connect()) {
			startNodes(arguments);
			for (int round = 0; round < rounds; round++) {
				awaitSettled(connection, daemons);
				sleep(settle);
				results.add(handOverOnce(connection, arguments));
			}
		}
		finally {
			closeNodes();
		}
		return results;
	}

	private Round handOverOnce(Connection connection, List<String> arguments) throws Exception {
		String holder = queryString(connection, "SELECT holder FROM leader_leases WHERE group_name = '" + GROUP + "'");
		long pid = queryLong(connection, "SELECT pid FROM leader_nodes WHERE node_id = '" + holder + "'");
		Map<String, Long> held = new TreeMap<>();
		try (Statement statement = connection.createStatement();
				ResultSet rows = statement
					.executeQuery("SELECT group_name, term FROM leader_leases WHERE holder = '" + holder + "'")) {
			while (rows.next()) {
				held.put(rows.getString(1), rows.getLong(2));
			}
		}
		long daemonsOnLeader = queryLong(connection, "SELECT count(*) FROM leader_assignments WHERE node_id = '"
				+ holder + "' AND state IN ('ASSIGNING', 'ACTIVE')");
		SampleAppNode leader = this.nodes.stream()
			.filter((node) -> node.pid() == pid)
			.findFirst()
			.orElseThrow(() -> new IllegalStateException("The leader " + holder + " is not a node of the benchmark"));
		// The signal on the database clock: the server read its clock between sent and
		// received.
		DatabaseClock clock = readClock(connection);
		long signalledAt = System.nanoTime();
		leader.sigterm();
		Instant signalOnDatabase = clock.at(signalledAt);
		if (!leader.awaitExit(60)) {
			throw new IllegalStateException(leader.name() + " did not exit within 60 s of SIGTERM");
		}
		Map<String, Instant> grants = awaitGrants(connection, held);
		String successor = queryString(connection,
				"SELECT holder FROM leader_leases WHERE group_name = '" + GROUP + "'");
		long successorPid = queryLong(connection, "SELECT pid FROM leader_nodes WHERE node_id = '" + successor + "'");
		double first = Double.MAX_VALUE;
		double last = 0;
		for (Instant grant : grants.values()) {
			double ms = ChronoUnit.MICROS.between(signalOnDatabase, grant) / 1e3;
			first = Math.min(first, ms);
			last = Math.max(last, ms);
		}
		Map<String, Double> steps = new LinkedHashMap<>();
		step(steps, "shutdown hook", leader.first((t) -> t.step().equals("hook")), signalledAt);
		step(steps, "context closed event", leader.first((t) -> t.step().equals("closed")), signalledAt);
		step(steps, "first lifecycle phase", leader.first((t) -> t.is("phase", Integer.toString(Integer.MAX_VALUE))),
				signalledAt);
		step(steps, "first daemon stopped", leader.first((t) -> t.step().equals("daemon-stopped")), signalledAt);
		step(steps, "revoke delivered", leader.first((t) -> t.is("revoked", GROUP + " " + held.get(GROUP))),
				signalledAt);
		step(steps, "first phase ended", leader.first((t) -> t.is("phase", Integer.toString(Integer.MAX_VALUE - 1))),
				signalledAt);
		this.nodes.stream()
			.filter((node) -> node.pid() == successorPid)
			.findFirst()
			.ifPresent((node) -> step(steps, "successor's granted event",
					node.first((t) -> t.step().equals("granted") && t.details().startsWith(GROUP + " ")
							&& Long.parseLong(t.details().substring(GROUP.length() + 1)) > held.get(GROUP)),
					signalledAt));
		replace(leader, arguments);
		return new Round(daemonsOnLeader, held.size(), first, last,
				ChronoUnit.MICROS.between(signalOnDatabase, grants.get(GROUP)) / 1e3, steps);
	}

	/**
	 * kill -9 of the leader of {@code billing}, then a new node in its place, round after
	 * round.
	 * @param arguments further arguments of every node, the lease settings among them
	 * @param daemons whether the nodes run the sample's daemons
	 * @param rounds how many failovers
	 * @param settle how long the cluster idles before each round, once it is complete
	 * @return every round
	 */
	List<Failover> failover(List<String> arguments, boolean daemons, int rounds, Duration settle) throws Exception {
		List<Failover> results = new ArrayList<>();
		try (Connection connection = this.database.connect()) {
			startNodes(arguments);
			for (int round = 0; round < rounds; round++) {
				awaitSettled(connection, daemons);
				sleep(settle);
				results.add(failoverOnce(connection, arguments));
			}
		}
		finally {
			closeNodes();
		}
		return results;
	}

	private Failover failoverOnce(Connection connection, List<String> arguments) throws Exception {
		String holder = queryString(connection, "SELECT holder FROM leader_leases WHERE group_name = '" + GROUP + "'");
		long pid = queryLong(connection, "SELECT pid FROM leader_nodes WHERE node_id = '" + holder + "'");
		long term = queryLong(connection, "SELECT term FROM leader_leases WHERE group_name = '" + GROUP + "'");
		SampleAppNode leader = this.nodes.stream()
			.filter((node) -> node.pid() == pid)
			.findFirst()
			.orElseThrow(() -> new IllegalStateException("The leader " + holder + " is not a node of the benchmark"));
		DatabaseClock clock = readClock(connection);
		long killedAt = System.nanoTime();
		leader.kill();
		Instant killOnDatabase = clock.at(killedAt);
		if (!leader.awaitExit(60)) {
			throw new IllegalStateException(leader.name() + " did not exit within 60 s of SIGKILL");
		}
		Instant expiresAt;
		try (Statement statement = connection.createStatement();
				ResultSet row = statement
					.executeQuery("SELECT term, expires_at FROM leader_leases WHERE group_name = '" + GROUP + "'")) {
			row.next();
			if (row.getLong(1) != term) {
				// A kill lost in a race with the end of a round: the failover would be
				// timed from the wrong lease.
				throw new IllegalStateException("The lease of " + GROUP + " moved on before it expired");
			}
			expiresAt = this.database.dialect().instant(row, 2);
		}
		Instant grant = awaitGrants(connection, Map.of(GROUP, term)).get(GROUP);
		replace(leader, arguments);
		return new Failover(ChronoUnit.MICROS.between(killOnDatabase, grant) / 1e3,
				ChronoUnit.MICROS.between(expiresAt, grant) / 1e3);
	}

	/**
	 * Reads the database clock, and the harness's monotonic clock around it, so that a
	 * moment of the harness can be placed on the database clock.
	 * @param connection the harness's connection
	 * @return the reading
	 */
	private DatabaseClock readClock(Connection connection) throws SQLException {
		long sent = System.nanoTime();
		try (Statement statement = connection.createStatement();
				ResultSet row = statement.executeQuery("SELECT " + this.database.dialect().clock())) {
			row.next();
			Instant now = this.database.dialect().instant(row, 1);
			return new DatabaseClock(now, (sent + System.nanoTime()) / 2);
		}
	}

	private static void step(Map<String, Double> steps, String name, Optional<SampleAppNode.Timing> timing,
			long signalledAt) {
		timing.ifPresent((reached) -> steps.put(name, (reached.nanoTime() - signalledAt) / 1e6));
	}

	/**
	 * Waits for a later term of every group the stopped leader held; polls seldom, after
	 * the leader exited, so that the polls take no core from the nodes during the
	 * hand-over.
	 * @param connection the harness's connection
	 * @param held the terms the stopped leader held, by group name
	 * @return the time each later term was acquired at, by group name
	 */
	private Map<String, Instant> awaitGrants(Connection connection, Map<String, Long> held) throws Exception {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
		String sql = "SELECT group_name, term, acquired_at FROM leader_leases WHERE group_name IN ("
				+ String.join(", ", Collections.nCopies(held.size(), "?")) + ")";
		while (true) {
			Map<String, Instant> grants = new TreeMap<>();
			try (PreparedStatement statement = connection.prepareStatement(sql)) {
				int index = 0;
				for (String group : held.keySet()) {
					statement.setString(++index, group);
				}
				try (ResultSet rows = statement.executeQuery()) {
					while (rows.next()) {
						if (rows.getLong(2) > held.get(rows.getString(1))) {
							grants.put(rows.getString(1), this.database.dialect().instant(rows, 3));
						}
					}
				}
			}
			if (grants.size() == held.size()) {
				return grants;
			}
			if (System.nanoTime() - deadline > 0) {
				throw new IllegalStateException("No successor took " + held + " within 60 s");
			}
			TimeUnit.MILLISECONDS.sleep(50);
		}
	}

	/**
	 * The database load of three idle nodes, with every statement the server logged for
	 * them.
	 * @param arguments further arguments of every node
	 * @param daemons whether the nodes run the sample's daemons
	 * @param warmUp how long to wait once the cluster is complete, before measuring
	 * @param window the length of one measuring window
	 * @param windows how many windows
	 * @return the load
	 */
	IdleResult idle(List<String> arguments, boolean daemons, Duration warmUp, Duration window, int windows)
			throws Exception {
		boolean logged = this.database.logStatements();
		try {
			String leader;
			try (Connection connection = this.database.connect()) {
				startNodes(arguments);
				awaitSettled(connection, daemons);
				leader = queryString(connection, "SELECT name FROM leader_nodes n JOIN leader_leases l "
						+ "ON l.holder = n.node_id WHERE l.group_name = '" + GROUP + "'");
			}
			sleep(warmUp);
			long logFrom = this.database.serverLogSize();
			long[] maintenanceBefore = maintenanceRuns();
			SessionSampler sampler = this.database.sampleSessions(Duration.ofMillis(100));
			LoadWindows load = LoadWindows.measure(this.database, window, windows);
			long[] maintenanceAfter = maintenanceRuns();
			Map<String, Map<String, Integer>> sampled = Map.of();
			if (sampler != null) {
				sampled = sampler.stop();
				sampler.close();
			}
			Map<Integer, String> sessions = logged ? this.database.applicationNames() : Map.of();
			String log = logged ? this.database.serverLogSince(logFrom) : null;
			return new IdleResult(load,
					(log != null)
							? StatementRate.fromServerLog(log, this.database.name(), sessions, leader, load.seconds())
							: List.of(),
					StatementRate.fromCounts(sampled, leader, load.seconds()),
					maintenanceAfter[0] - maintenanceBefore[0], maintenanceAfter[1] - maintenanceBefore[1]);
		}
		finally {
			closeNodes();
		}
	}

	/**
	 * Reads how often the server's autovacuum has vacuumed and analyzed the tables of the
	 * benchmark's database, whose transactions count in its load; PostgreSQL only.
	 * @return the vacuum runs, then the analyze runs; 0 and 0 on MariaDB, whose purge
	 * does not count in the nodes' user's statistics
	 */
	private long[] maintenanceRuns() throws SQLException {
		if (this.database.dialect() != BenchDatabase.Dialect.POSTGRESQL) {
			return new long[] { 0, 0 };
		}
		try (Connection connection = this.database.connect();
				Statement statement = connection.createStatement();
				ResultSet row = statement.executeQuery("SELECT coalesce(sum(autovacuum_count), 0), "
						+ "coalesce(sum(autoanalyze_count), 0) FROM pg_stat_user_tables")) {
			row.next();
			return new long[] { row.getLong(1), row.getLong(2) };
		}
	}

	private void startNodes(List<String> arguments) throws Exception {
		// The first node migrates the schema alone, and leads; the other two start
		// together.
		this.nodes.add(start(arguments).awaitReady(START_TIMEOUT_SECONDS));
		List<SampleAppNode> others = List.of(start(arguments), start(arguments));
		this.nodes.addAll(others);
		for (SampleAppNode node : others) {
			node.awaitReady(START_TIMEOUT_SECONDS);
		}
	}

	private SampleAppNode start(List<String> arguments) throws Exception {
		String name = "node-" + (++this.started);
		return SampleAppNode.start(this.jar, this.database, name, arguments,
				this.logs.resolve("sample-" + name + ".log"));
	}

	private void replace(SampleAppNode stopped, List<String> arguments) throws Exception {
		stopped.close();
		this.nodes.remove(stopped);
		this.nodes.add(start(arguments).awaitReady(START_TIMEOUT_SECONDS));
	}

	/**
	 * Waits until the cluster is complete: three live nodes, every group held, and with
	 * daemons each of them active.
	 * @param connection the harness's connection
	 * @param daemons whether the nodes run daemons
	 */
	private void awaitSettled(Connection connection, boolean daemons) throws Exception {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
		while (true) {
			boolean settled = queryLong(connection, "SELECT count(*) FROM leader_nodes") == this.nodes.size()
					&& queryLong(connection,
							"SELECT count(*) FROM leader_leases l JOIN leader_nodes n "
									+ "ON n.node_id = l.holder WHERE l.expires_at > "
									+ this.database.dialect().clock()) == GROUPS.size()
					&& (!daemons || queryLong(connection, "SELECT count(*) FROM leader_assignments a "
							+ "JOIN leader_nodes n ON n.node_id = a.node_id WHERE a.state = 'ACTIVE'") == DAEMONS);
			if (settled) {
				return;
			}
			if (System.nanoTime() - deadline > 0) {
				throw new IllegalStateException("The sample nodes did not settle within 120 s");
			}
			TimeUnit.MILLISECONDS.sleep(250);
		}
	}

	private static long queryLong(Connection connection, String sql) throws SQLException {
		try (Statement statement = connection.createStatement(); ResultSet row = statement.executeQuery(sql)) {
			return row.next() ? row.getLong(1) : -1;
		}
	}

	private static @Nullable String queryString(Connection connection, String sql) throws SQLException {
		try (Statement statement = connection.createStatement(); ResultSet row = statement.executeQuery(sql)) {
			return row.next() ? row.getString(1) : null;
		}
	}

	private void closeNodes() {
		this.nodes.forEach(SampleAppNode::close);
		this.nodes.clear();
	}

	/**
	 * Lets the cluster idle; a pause in the benchmark's schedule, never a
	 * synchronisation.
	 * @param duration how long to pause
	 */
	private static void sleep(Duration duration) throws InterruptedException {
		TimeUnit.NANOSECONDS.sleep(duration.toNanos());
	}

	/**
	 * One hand-over.
	 *
	 * @param daemonsOnLeader how many daemons the leader ran when it was signalled
	 * @param groups how many groups it led
	 * @param firstGrant signal to the first grant of one of its groups, database clock,
	 * ms
	 * @param lastGrant signal to the grant of the last of its groups, ms
	 * @param groupGrant signal to the grant of {@code billing}, ms
	 * @param steps the signal to each step the nodes printed, monotonic clock, ms
	 */
	record Round(long daemonsOnLeader, int groups, double firstGrant, double lastGrant, double groupGrant,
			Map<String, Double> steps) {
	}

	/**
	 * One failover.
	 *
	 * @param grant kill -9 to the successor's grant of {@code billing}, database clock,
	 * ms
	 * @param afterExpiry the dead lease's expiry to that grant, ms
	 */
	record Failover(double grant, double afterExpiry) {
	}

	/**
	 * The database clock as the harness read it: the server read its clock between sent
	 * and received, taken as their middle.
	 *
	 * @param databaseNow what the server read
	 * @param nanoTime the harness's monotonic clock at that moment
	 */
	private record DatabaseClock(Instant databaseNow, long nanoTime) {

		Instant at(long nanoTime) {
			return this.databaseNow.plusNanos(nanoTime - this.nanoTime);
		}

	}

	/**
	 * Three idle nodes.
	 *
	 * @param load the load the server counted
	 * @param statements each distinct statement of the nodes in the server log, most
	 * frequent first
	 * @param sampled each distinct statement of the nodes seen in
	 * {@code pg_stat_activity}, empty queries too
	 * @param autovacuums the autovacuum runs on the database's tables meanwhile
	 * @param autoanalyzes the autoanalyze runs on them meanwhile
	 */
	record IdleResult(LoadWindows load, List<StatementRate> statements, List<StatementRate> sampled, long autovacuums,
			long autoanalyzes) {
	}

}
