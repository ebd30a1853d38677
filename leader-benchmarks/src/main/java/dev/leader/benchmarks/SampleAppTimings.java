package dev.leader.benchmarks;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

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

	private final BenchDatabase database;

	private final SampleCluster cluster;

	SampleAppTimings(BenchDatabase database, Path logs, Path jar) {
		this.database = database;
		this.cluster = new SampleCluster(database, logs, jar);
	}

	Dialect dialect() {
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
		return rounds(arguments, daemons, rounds, settle, this::handOverOnce);
	}

	private Round handOverOnce(SampleTables tables, List<String> arguments) throws Exception {
		String holder = tables.holder(GROUP);
		long pid = tables.pid(holder);
		Map<String, Long> held = tables.termsHeldBy(holder);
		long daemonsOnLeader = tables.daemonsOn(holder);
		SampleAppNode leader = this.cluster.node(pid, holder);
		Signal signal = signal(tables, leader, "SIGTERM", leader::sigterm);
		long signalledAt = signal.nanoTime();
		Instant signalOnDatabase = signal.onDatabase();
		Map<String, Instant> grants = tables.awaitGrants(held);
		long successorPid = tables.pid(tables.holder(GROUP));
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
		step(steps, "revoke delivered", leader.first((t) -> t.isTerm("revoked", GROUP, held.get(GROUP))), signalledAt);
		step(steps, "first phase ended", leader.first((t) -> t.is("phase", Integer.toString(Integer.MAX_VALUE - 1))),
				signalledAt);
		step(steps, "successor's granted event", grantedEvent(successorPid, GROUP, held.get(GROUP)), signalledAt);
		this.cluster.replace(leader, arguments);
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
		return failover(arguments, daemons, rounds, settle, GROUP);
	}

	/**
	 * kill -9 of the leader of a group, then a new node in its place, round after round.
	 * The sample opts {@code billing} in to crash takeover, and leaves {@code default} to
	 * its lease's expiry.
	 * @param arguments further arguments of every node, the lease settings among them
	 * @param daemons whether the nodes run the sample's daemons
	 * @param rounds how many failovers
	 * @param settle how long the cluster idles before each round, once it is complete
	 * @param group the group whose leader is killed, and whose successor is timed
	 * @return every round
	 */
	List<Failover> failover(List<String> arguments, boolean daemons, int rounds, Duration settle, String group)
			throws Exception {
		return rounds(arguments, daemons, rounds, settle, (tables, args) -> failoverOnce(tables, args, group));
	}

	private Failover failoverOnce(SampleTables tables, List<String> arguments, String group) throws Exception {
		String holder = tables.holder(group);
		long pid = tables.pid(holder);
		long term = tables.term(group);
		SampleAppNode leader = this.cluster.node(pid, holder);
		// Read again after the kill, when the dead node can no longer renew it; with
		// crash
		// takeover a successor may have taken it over by then, and the reading before the
		// kill stands.
		Instant expiresAt = tables.expiry(group, term);
		Signal kill = signal(tables, leader, "SIGKILL", leader::kill);
		Instant killOnDatabase = kill.onDatabase();
		try {
			expiresAt = tables.expiry(group, term);
		}
		catch (IllegalStateException ex) {
			// taken over already
		}
		Instant grant = tables.awaitGrants(Map.of(group, term)).get(group);
		double grantEvent = grantedEvent(tables.pid(tables.holder(group)), group, term)
			.map((event) -> (event.nanoTime() - kill.nanoTime()) / 1e6)
			.orElse(Double.NaN);
		this.cluster.replace(leader, arguments);
		return new Failover(ChronoUnit.MICROS.between(killOnDatabase, grant) / 1e3,
				ChronoUnit.MICROS.between(expiresAt, grant) / 1e3, grantEvent);
	}

	/**
	 * Ends every database session of the leader of {@code billing} on the server while it
	 * lives ({@link SessionKill}), round after round, and times from the node's printed
	 * events its step-down and its successor's grant. The node stays: it reconnects and
	 * follows.
	 * @param arguments further arguments of every node
	 * @param daemons whether the nodes run the sample's daemons
	 * @param rounds how many kills
	 * @param settle how long the cluster idles before each round, once it is complete
	 * @return every round
	 */
	List<SessionLoss> sessionKill(List<String> arguments, boolean daemons, int rounds, Duration settle)
			throws Exception {
		return rounds(arguments, daemons, rounds, settle, this::sessionKillOnce);
	}

	private SessionLoss sessionKillOnce(SampleTables tables, List<String> arguments) throws Exception {
		String holder = tables.holder(GROUP);
		long pid = tables.pid(holder);
		long term = tables.term(GROUP);
		SampleAppNode leader = this.cluster.node(pid, holder);
		SessionKill.Ended ended;
		try (Connection connection = this.database.connect()) {
			ended = SessionKill.end(this.database, connection, leader);
		}
		tables.awaitGrants(Map.of(GROUP, term));
		String successor = tables.holder(GROUP);
		double grant = grantedEvent(tables.pid(successor), GROUP, term)
			.map((event) -> (event.nanoTime() - ended.nanoTime()) / 1e6)
			.orElse(Double.NaN);
		Optional<SampleAppNode.Timing> revoked = awaitTiming(leader, (t) -> t.isTerm("revoked", GROUP, term),
				Duration.ofSeconds(15));
		double revoke = revoked.map((event) -> (event.nanoTime() - ended.nanoTime()) / 1e6).orElse(Double.NaN);
		if (!leader.isAlive()) {
			this.cluster.replace(leader, arguments);
		}
		return new SessionLoss(ended.sessions(), revoke, revoked.map(SampleAppNode.Timing::reason).orElse(""), grant,
				holder != null && holder.equals(successor));
	}

	/**
	 * Waits, for a bounded time, for a node to print a step.
	 * @param node the node
	 * @param matching the condition on the step
	 * @param timeout how long to wait at most
	 * @return the step, if the node printed it in time
	 */
	private static Optional<SampleAppNode.Timing> awaitTiming(SampleAppNode node,
			Predicate<SampleAppNode.Timing> matching, Duration timeout) throws InterruptedException {
		long deadline = System.nanoTime() + timeout.toNanos();
		while (true) {
			Optional<SampleAppNode.Timing> found = node.first(matching);
			if (found.isPresent() || System.nanoTime() - deadline > 0) {
				return found;
			}
			TimeUnit.MILLISECONDS.sleep(10);
		}
	}

	/**
	 * Waits, for a second at most, for the {@code TIMING granted} line of a node's grant
	 * of a group of a later term than the given one; the harness saw the grant in the
	 * table, and the node prints it a moment after.
	 * @param pid the successor's process
	 * @param group the group
	 * @param term the term before the grant
	 * @return the line, if the node printed it in time
	 */
	private Optional<SampleAppNode.Timing> grantedEvent(long pid, String group, long term) throws InterruptedException {
		Optional<SampleAppNode> node = this.cluster.find(pid);
		if (node.isEmpty()) {
			return Optional.empty();
		}
		return awaitTiming(node.get(), (t) -> t.step().equals("granted") && t.details().startsWith(group + " ")
				&& Long.parseLong(t.details().substring(group.length() + 1)) > term, Duration.ofSeconds(1));
	}

	/**
	 * Starts the cluster, then plays the rounds, each once the cluster is complete and
	 * has idled; kills the cluster after the last.
	 * @param <T> the result of a round
	 * @param arguments further arguments of every node
	 * @param daemons whether the nodes run the sample's daemons
	 * @param rounds how many rounds
	 * @param settle how long the cluster idles before each round
	 * @param round plays one round
	 * @return every round's result
	 */
	private <T> List<T> rounds(List<String> arguments, boolean daemons, int rounds, Duration settle, RoundPlay<T> round)
			throws Exception {
		List<T> results = new ArrayList<>();
		try (SampleTables tables = new SampleTables(this.database)) {
			this.cluster.start(arguments);
			for (int i = 0; i < rounds; i++) {
				this.cluster.awaitSettled(tables, daemons);
				sleep(settle);
				results.add(round.play(tables, arguments));
			}
		}
		finally {
			this.cluster.close();
		}
		return results;
	}

	/**
	 * Sends the leader a signal, and waits until it exits.
	 * @param tables the harness's reads, for the database clock
	 * @param leader the leader
	 * @param name the signal's name, for the failure message
	 * @param send sends the signal
	 * @return when the signal was sent
	 */
	private static Signal signal(SampleTables tables, SampleAppNode leader, String name, Runnable send)
			throws Exception {
		// The signal on the database clock: the server read its clock between sent and
		// received.
		SampleTables.DatabaseClock clock = tables.readClock();
		long sentAt = System.nanoTime();
		send.run();
		Instant onDatabase = clock.at(sentAt);
		if (!leader.awaitExit(60)) {
			throw new IllegalStateException(leader.name() + " did not exit within 60 s of " + name);
		}
		return new Signal(sentAt, onDatabase);
	}

	private static void step(Map<String, Double> steps, String name, Optional<SampleAppNode.Timing> timing,
			long signalledAt) {
		timing.ifPresent((reached) -> steps.put(name, (reached.nanoTime() - signalledAt) / 1e6));
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
		boolean logged = this.database.serverLog().logStatements();
		try {
			String leader;
			try (SampleTables tables = new SampleTables(this.database)) {
				this.cluster.start(arguments);
				this.cluster.awaitSettled(tables, daemons);
				leader = tables.leaderName(GROUP);
			}
			sleep(warmUp);
			long logFrom = this.database.serverLog().size();
			long[] maintenanceBefore = maintenanceRuns();
			SessionSampler sampler = this.database.statistics().sampleSessions(Duration.ofMillis(100));
			LoadWindows load = LoadWindows.measure(this.database, window, windows);
			long[] maintenanceAfter = maintenanceRuns();
			Map<String, Map<String, Integer>> sampled = Map.of();
			if (sampler != null) {
				sampled = sampler.stop();
				sampler.close();
			}
			Map<Integer, String> sessions = logged ? this.database.statistics().applicationNames() : Map.of();
			String log = logged ? this.database.serverLog().since(logFrom) : null;
			return new IdleResult(load,
					(log != null)
							? StatementRate.fromServerLog(log, this.database.name(), sessions, leader, load.seconds())
							: List.of(),
					StatementRate.fromCounts(sampled, leader, load.seconds()),
					maintenanceAfter[0] - maintenanceBefore[0], maintenanceAfter[1] - maintenanceBefore[1]);
		}
		finally {
			this.cluster.close();
		}
	}

	/**
	 * Reads how often the server's autovacuum has vacuumed and analyzed the tables of the
	 * benchmark's database, whose transactions count in its load; PostgreSQL only.
	 * @return the vacuum runs, then the analyze runs; 0 and 0 on MariaDB, whose purge
	 * does not count in the nodes' user's statistics
	 */
	private long[] maintenanceRuns() throws SQLException {
		if (this.database.dialect() != Dialect.POSTGRESQL) {
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
	 * @param grantEvent kill -9 to the successor's granted event, monotonic clock, ms;
	 * NaN if the successor did not print it
	 */
	record Failover(double grant, double afterExpiry, double grantEvent) {
	}

	/**
	 * One server-side kill of the sessions of the leader of {@code billing}, which lived
	 * on. Times are from the harness's kill statement, on the machine's monotonic clock,
	 * in ms, NaN when the node did not print the event in time.
	 *
	 * @param sessions how many of the leader's sessions the server ended
	 * @param revoke to the old leader's revoked event of its term
	 * @param reason that revoke's reason, empty if there was none
	 * @param grant to the successor's granted event
	 * @param regained whether the successor was the old leader itself, once reconnected
	 */
	record SessionLoss(int sessions, double revoke, String reason, double grant, boolean regained) {

		/**
		 * Returns how long both nodes believed they led {@code billing}: from the
		 * successor's grant to the old leader's revoke, 0 if the revoke came first.
		 * @return the window, in ms, NaN if either event is missing or the old leader
		 * regained the lease itself
		 */
		double window() {
			return this.regained ? Double.NaN : Math.max(0, this.revoke - this.grant);
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

	/**
	 * When the harness sent a signal.
	 *
	 * @param nanoTime the harness's monotonic clock
	 * @param onDatabase that moment on the database clock
	 */
	private record Signal(long nanoTime, Instant onDatabase) {
	}

	/**
	 * Plays one round on the settled cluster.
	 *
	 * @param <T> the round's result
	 */
	@FunctionalInterface
	private interface RoundPlay<T> {

		T play(SampleTables tables, List<String> arguments) throws Exception;

	}

}
