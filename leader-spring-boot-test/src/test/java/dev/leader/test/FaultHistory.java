package dev.leader.test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Supplier;

import javax.sql.DataSource;

import dev.leader.lease.LeaseSettings;
import dev.leader.test.NodeEvent.Type;

/**
 * The history of a fault-injection run, and the checkers over it. The history is what the
 * test did (the {@link Episode episodes}, with when each fault began and was lifted, and
 * when each process was frozen or each node's network stalled), what every node
 * incarnation printed, the rows that the {@link FencedWriter fenced writers} committed to
 * the log table, and those that the {@link GuardedLoad guarded-write load} committed to
 * the load table. Every time is {@link System#nanoTime()}: one monotonic clock on one
 * machine, shared by the test and every node.
 * <p>
 * {@link #check} runs every checker and returns every violation found, each naming the
 * episode it happened in; a run is correct when there are none. See {@link Checks} for
 * what each checker asserts.
 */
public final class FaultHistory {

	/**
	 * The log table the writers append to; create it with {@link #createLogTable} before
	 * the nodes start.
	 */
	public static final String LOG_TABLE = "fault_log";

	/**
	 * The table the guarded-write load appends to; {@link #createLogTable} creates it
	 * too.
	 */
	public static final String LOAD_TABLE = "fault_load";

	private final LeaseSettings settings;

	private final List<String> groups;

	private final Duration writeResumeBound;

	private final List<String> crashTakeoverGroups;

	private final Fence fence;

	private final List<Incarnation> incarnations = new CopyOnWriteArrayList<>();

	private final List<Episode> episodes = new CopyOnWriteArrayList<>();

	private final List<Interval> stalls = new CopyOnWriteArrayList<>();

	private volatile long endedAt = Long.MAX_VALUE;

	/**
	 * Creates an empty history.
	 * @param settings the lease settings of every node
	 * @param groups the groups
	 * @param writeResumeBound how soon after a fault was lifted and a leader exists a new
	 * write must commit
	 */
	public FaultHistory(LeaseSettings settings, List<String> groups, Duration writeResumeBound) {
		this(settings, groups, List.of(), writeResumeBound);
	}

	/**
	 * Creates an empty history of nodes that bind some groups' leases to their sessions.
	 * @param settings the lease settings of every node
	 * @param groups the groups
	 * @param crashTakeoverGroups the groups with crash takeover
	 * ({@code leader.lease.crash-takeover-groups})
	 * @param writeResumeBound how soon after a fault was lifted and a leader exists a new
	 * write must commit
	 */
	public FaultHistory(LeaseSettings settings, List<String> groups, List<String> crashTakeoverGroups,
			Duration writeResumeBound) {
		this(settings, groups, crashTakeoverGroups, writeResumeBound, Fence.LEASE);
	}

	/**
	 * Creates an empty history of nodes whose writes a given fence protects.
	 * @param settings the lease settings of every node
	 * @param groups the groups
	 * @param writeResumeBound how soon after a fault was lifted and a leader exists a new
	 * write must commit
	 * @param fence what rejects the writes of a stale term
	 */
	public FaultHistory(LeaseSettings settings, List<String> groups, Duration writeResumeBound, Fence fence) {
		this(settings, groups, List.of(), writeResumeBound, fence);
	}

	private FaultHistory(LeaseSettings settings, List<String> groups, List<String> crashTakeoverGroups,
			Duration writeResumeBound, Fence fence) {
		this.settings = settings;
		this.groups = List.copyOf(groups);
		this.crashTakeoverGroups = List.copyOf(crashTakeoverGroups);
		this.writeResumeBound = writeResumeBound;
		this.fence = fence;
	}

	/**
	 * Creates the log table that {@link FencedWriter} appends to, and the load table of
	 * {@link GuardedLoad}.
	 * @param dataSource a data source on the test's schema
	 */
	public static void createLogTable(DataSource dataSource) {
		createTable(dataSource, LOG_TABLE);
		createTable(dataSource, LOAD_TABLE);
	}

	private static void createTable(DataSource dataSource, String table) {
		try (Connection connection = dataSource.getConnection(); Statement statement = connection.createStatement()) {
			// Both hand out ids as the inserts draw them, which the checkers rely on.
			String id = connection.getMetaData().getDatabaseProductName().contains("MariaDB") ? "BIGINT AUTO_INCREMENT"
					: "BIGSERIAL";
			statement.execute("""
					CREATE TABLE %s (
					    id          %s PRIMARY KEY,
					    group_name  VARCHAR(120) NOT NULL,
					    term        BIGINT       NOT NULL,
					    node        VARCHAR(120) NOT NULL,
					    incarnation BIGINT       NOT NULL,
					    seq         BIGINT       NOT NULL,
					    stamp_nanos BIGINT       NOT NULL
					)
					""".formatted(table, id));
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not create " + table, ex);
		}
	}

	/**
	 * Reads every committed write of the fenced writers, in id order.
	 * @param dataSource a data source on the test's schema
	 * @return the rows
	 */
	public static List<Write> readWrites(DataSource dataSource) {
		return readRows(dataSource, LOG_TABLE);
	}

	/**
	 * Reads every committed transaction of the guarded-write load, in id order.
	 * @param dataSource a data source on the test's schema
	 * @return the rows
	 */
	public static List<Write> readLoad(DataSource dataSource) {
		return readRows(dataSource, LOAD_TABLE);
	}

	private static List<Write> readRows(DataSource dataSource, String table) {
		String sql = "SELECT id, group_name, term, node, incarnation, seq, stamp_nanos FROM %s ORDER BY id"
			.formatted(table);
		List<Write> writes = new ArrayList<>();
		try (Connection connection = dataSource.getConnection();
				PreparedStatement statement = connection.prepareStatement(sql);
				ResultSet rows = statement.executeQuery()) {
			while (rows.next()) {
				writes.add(new Write(rows.getLong(1), rows.getString(2), rows.getLong(3), rows.getString(4),
						rows.getLong(5), rows.getLong(6), rows.getLong(7)));
			}
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not read " + table, ex);
		}
		return writes;
	}

	/**
	 * Reads the committed writes of the fenced writers under one term, in id order.
	 * @param dataSource a data source on the test's schema
	 * @param group the group
	 * @param term the term
	 * @return the rows
	 */
	public static List<Write> readWrites(DataSource dataSource, String group, long term) {
		return readWrites(dataSource).stream()
			.filter((write) -> write.group().equals(group) && write.term() == term)
			.toList();
	}

	/**
	 * Returns the groups that a node believes it leads, with the terms it was granted.
	 * @param process the node
	 * @param groups the groups to look at
	 * @return the terms by group, empty for a follower
	 */
	public static Map<String, Long> heldTerms(NodeProcess process, List<String> groups) {
		Map<String, Long> held = new LinkedHashMap<>();
		for (String group : groups) {
			if (process.isLeader(group)) {
				held.put(group, process.lastEvent((event) -> event.is(Type.GRANTED, group)).orElseThrow().term());
			}
		}
		return held;
	}

	/**
	 * Returns the latest stamp of a committed write of the group.
	 * @param dataSource a data source on the test's schema
	 * @param group the group
	 * @return the stamp, or empty if none committed yet
	 */
	public static OptionalLong latestStamp(DataSource dataSource, String group) {
		String sql = "SELECT max(stamp_nanos) FROM %s WHERE group_name = ?".formatted(LOG_TABLE);
		try (Connection connection = dataSource.getConnection();
				PreparedStatement statement = connection.prepareStatement(sql)) {
			statement.setString(1, group);
			try (ResultSet row = statement.executeQuery()) {
				row.next();
				long stamp = row.getLong(1);
				return row.wasNull() ? OptionalLong.empty() : OptionalLong.of(stamp);
			}
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not read " + LOG_TABLE, ex);
		}
	}

	/**
	 * Keeps a run's summary in {@code target}, for the build's reports.
	 * @param fileName the file's name
	 * @param summary the summary
	 * @throws IOException if the file cannot be written
	 */
	public static void keepSummary(String fileName, String summary) throws IOException {
		Files.createDirectories(Path.of("target"));
		Files.writeString(Path.of("target", fileName), summary + System.lineSeparator(), StandardCharsets.UTF_8);
	}

	/**
	 * Waits as part of a fault: the length of a pause or a stall, or the random moment a
	 * fault strikes. Never a way to wait for an outcome: that is Awaitility's job.
	 * @param duration how long
	 */
	public static void sleepAsFault(Duration duration) {
		try {
			Thread.sleep(duration.toMillis());
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted while injecting a fault", ex);
		}
	}

	/**
	 * Returns how soon after a fault on a leader a node must lead each group it held
	 * again (G5): the lease plus 0.5 s.
	 * @return the bound
	 */
	public Duration failoverBound() {
		return this.settings.duration().plusMillis(500);
	}

	/**
	 * Records a new node process.
	 * @param number the incarnation number it writes into the log table
	 * @param process the process
	 * @return the incarnation, to record its faults on
	 */
	public Incarnation started(long number, NodeProcess process) {
		Incarnation incarnation = new Incarnation(number, process);
		this.incarnations.add(incarnation);
		return incarnation;
	}

	/**
	 * Records an episode, once its fault has been lifted.
	 * @param episode the episode
	 */
	public void add(Episode episode) {
		this.episodes.add(episode);
	}

	/**
	 * Records a network stall between a node and the database.
	 * @param nodeId the node
	 * @param from when the stall began
	 * @param to when it ended
	 */
	public void stalled(String nodeId, long from, long to) {
		this.stalls.add(new Interval(nodeId, from, to));
	}

	/**
	 * Stalls the network between a node and the database for a while, and records that.
	 * @param proxy the node's proxy
	 * @param nodeId the node
	 * @param from a time no later than the stall began
	 * @param duration how long the stall lasts
	 * @return a time no earlier than its end
	 */
	public long stall(StallingProxy proxy, String nodeId, long from, Duration duration) {
		return stall(() -> proxy.stall(duration), nodeId, from, duration);
	}

	/**
	 * Stalls the network between a node and the database, through every proxy of the
	 * node, for a while, and records that.
	 * @param proxies the proxies of the nodes
	 * @param nodeId the node
	 * @param from a time no later than the stall began
	 * @param duration how long the stall lasts
	 * @return a time no earlier than its end
	 */
	public long stall(NodeProxies proxies, String nodeId, long from, Duration duration) {
		return stall(() -> proxies.stall(nodeId, duration), nodeId, from, duration);
	}

	private long stall(Runnable stall, String nodeId, long from, Duration duration) {
		stall.run();
		sleepAsFault(duration);
		long to = System.nanoTime();
		stalled(nodeId, from, to);
		return to;
	}

	/**
	 * Ends the run: records its end, then stops the nodes still running with SIGTERM and
	 * waits up to 15 s for each to exit, so that all their leaderships end.
	 * @param current the latest incarnation of each node
	 */
	public void stopGracefully(Collection<Incarnation> current) {
		List<NodeProcess> running = current.stream().map(Incarnation::process).filter(NodeProcess::isAlive).toList();
		ended(System.nanoTime());
		running.forEach(NodeProcess::sigterm);
		running.forEach((process) -> process.awaitExit(Duration.ofSeconds(15)));
	}

	/**
	 * Records the end of the run: the moment the surviving nodes are stopped gracefully.
	 * @param at a time no later than the first SIGTERM
	 */
	public void ended(long at) {
		this.endedAt = at;
	}

	/**
	 * Returns the episodes recorded so far.
	 * @return the episodes
	 */
	public List<Episode> episodes() {
		return List.copyOf(this.episodes);
	}

	/**
	 * Returns the incarnations recorded so far.
	 * @return the incarnations
	 */
	public List<Incarnation> incarnations() {
		return List.copyOf(this.incarnations);
	}

	/**
	 * Runs every checker over the history and the given rows. Call it once every
	 * surviving node has been stopped gracefully, so that every leadership they had has
	 * ended.
	 * @param writes the committed writes of the fenced writers, in id order
	 * @param load the committed transactions of the guarded-write load, in id order
	 * @return the outcome
	 */
	public Checks check(List<Write> writes, List<Write> load) {
		return new Checks(writes, load);
	}

	/**
	 * Places a time in the run, for a violation message: how long after the origin, and
	 * in which episode.
	 * @param time a {@link System#nanoTime()}
	 * @return the description
	 */
	String episodeAt(long time) {
		Episode current = null;
		for (Episode episode : this.episodes) {
			if (episode.startedAt() - time <= 0) {
				current = episode;
			}
		}
		return "at " + millis(time) + " ms, " + ((current != null) ? "in " + current : "before the first fault");
	}

	private static long origin = System.nanoTime();

	/**
	 * Sets the instant that times in messages are relative to.
	 * @param nanoTime the start of the run
	 */
	public static void setOrigin(long nanoTime) {
		origin = nanoTime;
	}

	static long millis(long nanoTime) {
		return (nanoTime - origin) / 1_000_000;
	}

	/**
	 * One run of a node id: a process, and the faults it went through.
	 */
	public static final class Incarnation {

		private final long number;

		private final NodeProcess process;

		private final List<Interval> frozen = new CopyOnWriteArrayList<>();

		private volatile long killedAt;

		Incarnation(long number, NodeProcess process) {
			this.number = number;
			this.process = process;
		}

		/**
		 * Returns the incarnation number.
		 * @return the number
		 */
		public long number() {
			return this.number;
		}

		/**
		 * Returns the process.
		 * @return the process
		 */
		public NodeProcess process() {
			return this.process;
		}

		/**
		 * Records that the process was frozen with SIGSTOP and thawed again.
		 * @param from a time no later than the SIGSTOP
		 * @param to a time no earlier than the SIGCONT
		 */
		public void frozen(long from, long to) {
			this.frozen.add(new Interval(this.process.nodeId(), from, to));
		}

		/**
		 * Records that the process was killed with SIGKILL.
		 * @param at a time no later than the kill
		 */
		public void killed(long at) {
			this.killedAt = at;
		}

		/**
		 * Freezes the process with SIGSTOP for a while, thaws it with SIGCONT, and
		 * records that.
		 * @param from a time no later than the SIGSTOP
		 * @param duration how long the process stays frozen
		 * @return a time no earlier than the SIGCONT
		 */
		public long pause(long from, Duration duration) {
			this.process.sigstop();
			try {
				sleepAsFault(duration);
			}
			finally {
				this.process.sigcont();
			}
			long to = System.nanoTime();
			frozen(from, to);
			return to;
		}

		/**
		 * Freezes the process with SIGSTOP while an action runs, for example a wait for a
		 * successor to take over and write, thaws it with SIGCONT even if the action
		 * fails, and records that.
		 * @param <T> the action's result
		 * @param action what runs while the process is frozen
		 * @return the pause, with the action's result
		 */
		public <T> Paused<T> pauseWhile(Supplier<T> action) {
			long stoppedAt = System.nanoTime();
			this.process.sigstop();
			T result;
			long resuming;
			try {
				result = action.get();
			}
			finally {
				// The node runs again as soon as the signal is delivered, before the
				// kill command has returned.
				resuming = System.nanoTime();
				this.process.sigcont();
			}
			long resumedAt = System.nanoTime();
			frozen(stoppedAt, resumedAt);
			return new Paused<>(this.process.nodeId(), result, stoppedAt, resuming, resumedAt);
		}

		/**
		 * Kills the process with SIGKILL, and records that.
		 * @param at a time no later than the kill
		 */
		public void kill(long at) {
			killed(at);
			this.process.kill9();
		}

		boolean wasKilled() {
			return this.killedAt != 0;
		}

		Optional<Interval> frozenAt(long time) {
			return this.frozen.stream().filter((interval) -> interval.contains(time)).findFirst();
		}

		@Override
		public String toString() {
			return this.process.nodeId() + "#" + this.number;
		}

	}

	/**
	 * A pause of a node by {@link Incarnation#pauseWhile}.
	 *
	 * @param <T> the result of the action that ran meanwhile
	 * @param node the paused node
	 * @param result the action's result
	 * @param stoppedAt a time no later than the SIGSTOP
	 * @param resuming a time no later than the SIGCONT
	 * @param resumedAt a time no earlier than the SIGCONT
	 */
	public record Paused<T>(String node, T result, long stoppedAt, long resuming, long resumedAt) {

		/**
		 * Returns the pause as an episode.
		 * @param number the episode's number
		 * @param heldTerms the groups and terms the node led when it was paused
		 * @return the episode
		 */
		public Episode episode(int number, Map<String, Long> heldTerms) {
			return new Episode(number, FaultKind.PAUSE, this.node, heldTerms, this.stoppedAt, this.resumedAt,
					"pause " + (this.resumedAt - this.stoppedAt) / 1_000_000 + " ms");
		}

	}

	/**
	 * A fault and what it was aimed at.
	 *
	 * @param number the episode number, from 1
	 * @param kind the fault
	 * @param node the node it hit, or {@link #EVERY_NODE} for a server event or a
	 * reconfiguration
	 * @param heldTerms the groups and terms the node led when the fault began; empty if
	 * it hit a follower
	 * @param startedAt when the fault began: the kill, the SIGSTOP, the stall, the
	 * termination
	 * @param liftedAt when it was lifted: the kill, the SIGCONT, the end of the stall,
	 * the termination
	 * @param detail the fault's parameters, for messages
	 */
	public record Episode(int number, FaultKind kind, String node, Map<String, Long> heldTerms, long startedAt,
			long liftedAt, String detail) {

		/**
		 * The node of an episode that hits every node.
		 */
		public static final String EVERY_NODE = "*";

		@Override
		public String toString() {
			return "episode " + this.number + " (" + this.kind + " " + this.node
					+ (this.heldTerms.isEmpty() ? ", a follower" : ", leading " + this.heldTerms) + ", " + this.detail
					+ ")";
		}

	}

	/**
	 * What rejects the writes of a stale term, and so when a committed write of a term is
	 * stale.
	 */
	public enum Fence {

		/**
		 * The lease's guard ({@code Fencing.guard}) or an append to the decision log in
		 * the write's transaction: a write of a term is stale once a higher term has been
		 * granted, since the grant waits for the transactions that hold the lease's row.
		 */
		LEASE,

		/**
		 * The fences table ({@code Fencing.advance}, with the group as the resource), as
		 * with etcd, whose leases are not in the database: a write of a term is stale
		 * once a write of a higher term has committed; before that, a deposed leader's
		 * write may still commit (see the etcd page of the documentation).
		 */
		FENCES_TABLE

	}

	/**
	 * The kinds of faults.
	 */
	public enum FaultKind {

		/**
		 * SIGSTOP, a wait, then SIGCONT.
		 */
		PAUSE,

		/**
		 * SIGKILL, then a new incarnation of the same node id.
		 */
		KILL,

		/**
		 * {@code pg_terminate_backend} of every session of the node.
		 */
		TERMINATE,

		/**
		 * A network stall between the node and the database, in both directions.
		 */
		STALL,

		/**
		 * SIGKILL of a member of the etcd cluster that the nodes coordinate through; the
		 * episode's node is the member, not a node of the application.
		 */
		MEMBER_KILL,

		/**
		 * A server event: the primary crashed and its standby promoted; with an
		 * asynchronous standby whose replication was cut first, the commits since are
		 * lost (the episode's detail then says {@code lost}).
		 */
		FAILOVER,

		/**
		 * A server event: the synchronous standby cut off, so that commits wait.
		 */
		STANDBY_CUT,

		/**
		 * A server event: the server crashed ({@code pg_ctl restart -m immediate}, or
		 * SIGKILL of {@code mariadbd}) and started again.
		 */
		RESTART,

		/**
		 * SIGSTOP of a member of the etcd cluster, a wait, then SIGCONT; the episode's
		 * node is the member. It hits every node: each node's calls to that member hang
		 * until they time out, and a node's tick makes several, spread over the members,
		 * so the leader may lose its lease and a new term follow the resume, as after a
		 * server event.
		 */
		MEMBER_PAUSE,

		/**
		 * The harness stopped every node gracefully and started them again with the
		 * settings of another cell of the configuration matrix.
		 */
		RECONFIGURE;

		/**
		 * Returns whether the fault hits the database or the etcd cluster's answers, so
		 * every node, rather than one node.
		 * @return whether it is a server event, a paused etcd member or a reconfiguration
		 */
		public boolean hitsEveryNode() {
			return this.ordinal() >= FAILOVER.ordinal();
		}

		/**
		 * Picks a process fault: a pause 35 times in 100, a kill 25, a termination 20 and
		 * a stall 20.
		 * @param random the source of randomness
		 * @return the fault
		 */
		public static FaultKind pick(SplittableRandom random) {
			int dice = random.nextInt(100);
			if (dice < 35) {
				return PAUSE;
			}
			if (dice < 60) {
				return KILL;
			}
			return (dice < 80) ? TERMINATE : STALL;
		}

	}

	/**
	 * A committed row of the log table.
	 *
	 * @param id the row id, assigned in commit order across terms (see {@link Checks})
	 * @param group the group
	 * @param term the term the write was fenced with
	 * @param node the writing node
	 * @param incarnation the writing incarnation
	 * @param seq the incarnation's attempt number
	 * @param stampNanos {@link System#nanoTime()} after the guard passed, before the
	 * commit
	 */
	public record Write(long id, String group, long term, String node, long incarnation, long seq, long stampNanos) {
	}

	/**
	 * A node's belief that it leads a group for a term: from the {@code GRANTED} line to
	 * the {@code REVOKED} line, or to the kill if the incarnation was killed first.
	 *
	 * @param incarnation the incarnation
	 * @param group the group
	 * @param term the term
	 * @param grantedAt when it printed the grant
	 * @param endedAt when it printed the revoke, or the kill
	 * @param revoked whether it printed a revoke
	 */
	record Window(Incarnation incarnation, String group, long term, long grantedAt, long endedAt, boolean revoked) {

		boolean overlaps(Window other) {
			return this.grantedAt < other.endedAt && other.grantedAt < this.endedAt;
		}

		String node() {
			return this.incarnation.process.nodeId();
		}

		@Override
		public String toString() {
			return "term " + this.term + " of " + this.incarnation + " [" + millis(this.grantedAt) + " ms, "
					+ millis(this.endedAt) + " ms" + (this.revoked ? "" : ", killed") + "]";
		}

	}

	/**
	 * A stretch of time of one node.
	 */
	record Interval(String node, long from, long to) {

		boolean contains(long time) {
			return this.from <= time && time <= this.to;
		}

	}

	/**
	 * The outcome of every checker:
	 * <ol>
	 * <li><b>Terms in commit order.</b> Per group, the terms of the committed writes
	 * never decrease in id order. Ids are commit order across terms: a write's id is
	 * drawn by its {@code INSERT}, after its guard locked the lease row
	 * {@code FOR SHARE}; a takeover is an {@code UPDATE} of that row, so it waits until
	 * every guarded transaction of the earlier term has committed or rolled back, and
	 * every write of the later term guards only after the takeover, so it draws a later
	 * value from the sequence (which hands out rising values in the order they are drawn;
	 * on MariaDB, InnoDB's auto-increment counter, and the guard's lock is on the
	 * {@code lease_terms} row, which a takeover locks {@code FOR UPDATE}). Within a term,
	 * one writer thread commits one transaction after another.</li>
	 * <li><b>One writer per term.</b> The committed writes of a term come from one node,
	 * and from an incarnation that was granted that term; so do the committed
	 * transactions of the guarded-write load.</li>
	 * <li><b>Grants and revokes pair up.</b> Per incarnation and group, the lines
	 * alternate grant, revoke, grant, ... with the same term in each pair; only an
	 * incarnation killed with SIGKILL may end on a grant. Grants in time order carry
	 * rising terms; the same term twice only when a killed node id was restarted within
	 * its lease, which the coordinator treats as the same holder.</li>
	 * <li><b>Overlaps only while paused, and never a stale commit.</b> Two windows of
	 * different terms overlap only when the earlier holder was frozen or stalled at the
	 * later grant, or thawed at most a second before it, and its window ended at most a
	 * second after it was thawed; or, in a group with crash takeover, when a fault ended
	 * the earlier holder's sessions (a termination, a server event) and the overlap
	 * lasted at most half a second. Whether or not windows overlap, no committed write or
	 * load transaction of a term is stamped after a grant of a higher term; with the
	 * {@link Fence#FENCES_TABLE fences table}, after a committed write of a higher
	 * term.</li>
	 * <li><b>Failover.</b> After every fault on a leader, a node that is not frozen leads
	 * each group it led within the lease plus 0.5 s of the fault, and keeps leading for
	 * at least a renew interval (or until the next fault, or the end of the run); and
	 * after every fault, a write of each group commits within the write-resume bound of
	 * the moment the fault was lifted and a leader existed.</li>
	 * <li><b>Terms change only on faults on the leader.</b> Every grant of a new term
	 * after a group's first has a cause: a fault hit the node that held the term before
	 * while it still believed it led, and the new term was granted between the start of
	 * the fault and the failover bound (lease plus 0.5 s) after the node was back
	 * (lifted, or for a kill, the next incarnation ready); or the harness had begun to
	 * stop every node gracefully. A leader that loses its lease on its own, for example
	 * because guarded transactions held up its renewal, fails this check.</li>
	 * <li><b>Server events.</b> An episode that hits every node (a failover, a standby
	 * cut off, a server's restart, a paused etcd member, the harness restarting every
	 * node) explains a term change granted up to 10 s after it was lifted; its recovery
	 * is bounded by the harness's wait for a healthy cluster rather than by the failover
	 * and write-resume bounds; and an overlap that begins between a failover's crash and
	 * a lease after its promotion is excused: the promoted server lacks the last
	 * renewals.</li>
	 * </ol>
	 */
	public final class Checks {

		private static final long THAW_TOLERANCE_NANOS = Duration.ofSeconds(1).toNanos();

		/**
		 * How long a holder whose session ended may still believe it leads a group with
		 * crash takeover after a follower took it over.
		 */
		private static final long SESSION_NOTICE_NANOS = Duration.ofMillis(500).toNanos();

		/**
		 * How long after a server event is lifted the nodes may take to reach the server
		 * again and be granted: reconnections, the multi-host URL's recheck, and the
		 * lease of a holder that could not renew meanwhile.
		 */
		private static final long SERVER_RECOVERY_NANOS = Duration.ofSeconds(10).toNanos();

		private final List<Write> writes;

		private final List<Write> load;

		private final List<String> violations = new ArrayList<>();

		private final Map<String, List<Window>> windows = new HashMap<>();

		private final List<Long> failovers = new ArrayList<>();

		private final Map<FaultKind, Long> maxFailoverByKind = new EnumMap<>(FaultKind.class);

		private final List<Long> writeResumes = new ArrayList<>();

		private int overlaps;

		private long sessionOverlapMax;

		private long staleAttemptsRejected;

		private int sameTermRegrants;

		private int termChanges;

		private int termChangesWithoutFault;

		Checks(List<Write> writes, List<Write> load) {
			this.writes = writes;
			this.load = load;
			for (String group : FaultHistory.this.groups) {
				this.windows.put(group, pairGrantsAndRevokes(group));
				checkTermsInCommitOrder(group);
				checkOneWriterPerTerm(group, this.writes, "writes");
				checkOneWriterPerTerm(group, this.load, "load transactions");
				checkOverlaps(group);
				checkNoStaleCommit(group, this.writes, "write");
				checkNoStaleCommit(group, this.load, "load transaction");
				checkFailover(group);
				checkTermsChangeOnlyOnFaultsOnTheLeader(group);
			}
		}

		/**
		 * Returns every violation found.
		 * @return the violations, empty for a correct run
		 */
		public List<String> violations() {
			return List.copyOf(this.violations);
		}

		/**
		 * Returns the failover times: per fault on a leader and group it led, how long
		 * until a node led again.
		 * @return the times in nanoseconds
		 */
		public List<Long> failovers() {
			return List.copyOf(this.failovers);
		}

		/**
		 * Returns a one-line summary of the run.
		 * @param seed the seed of the run
		 * @param elapsed how long the run took
		 * @return the summary
		 */
		public String summary(long seed, Duration elapsed) {
			Map<FaultKind, Long> kinds = new EnumMap<>(FaultKind.class);
			for (FaultKind kind : FaultKind.values()) {
				kinds.put(kind, 0L);
			}
			FaultHistory.this.episodes.forEach((episode) -> kinds.merge(episode.kind(), 1L, Long::sum));
			long onLeaders = FaultHistory.this.episodes.stream()
				.filter((episode) -> !episode.heldTerms().isEmpty())
				.count();
			long rejected = countEvents(Type.REJECTED);
			long failed = countEvents(Type.FAILED);
			return String.format(
					"Fault run: seed=%d episodes=%d faults=%s on-leader=%d violations=%d writes-committed=%d "
							+ "writes-rejected=%d (stale attempts after a takeover=%d) writes-failed=%d "
							+ "load-committed=%d load-rejected=%d load-failed=%d term-changes=%d "
							+ "(without a fault on the leader=%d) "
							+ "overlapping-windows=%d (after a session ended, longest %dms) same-term-regrants=%d "
							+ "failover-max=%dms failover-p50=%dms "
							+ "failover-p99=%dms (n=%d, bound %dms) failover-max-by-fault-ms=%s write-resume-max=%dms "
							+ "elapsed=%ds",
					seed, FaultHistory.this.episodes.size(), kinds, onLeaders, this.violations.size(),
					this.writes.size(), rejected, this.staleAttemptsRejected, failed, this.load.size(),
					countEvents(Type.LOAD_REJECTED), countEvents(Type.LOAD_FAILED), this.termChanges,
					this.termChangesWithoutFault, this.overlaps, this.sessionOverlapMax / 1_000_000,
					this.sameTermRegrants, percentile(this.failovers, 100), percentile(this.failovers, 50),
					percentile(this.failovers, 99), this.failovers.size(), failoverBound() / 1_000_000,
					this.maxFailoverByKind, percentile(this.writeResumes, 100), elapsed.toSeconds());
		}

		private long countEvents(Type type) {
			return FaultHistory.this.incarnations.stream()
				.flatMap((incarnation) -> incarnation.process.events().stream())
				.filter((event) -> event.type() == type)
				.count();
		}

		private List<Window> pairGrantsAndRevokes(String group) {
			List<Window> windows = new ArrayList<>();
			for (Incarnation incarnation : FaultHistory.this.incarnations) {
				NodeEvent open = null;
				for (NodeEvent event : incarnation.process.events()) {
					if (event.is(Type.GRANTED, group)) {
						if (open != null) {
							violation(event.nanoTime(), incarnation + " was granted " + event + " while it still held "
									+ open + " (no revoke in between)");
						}
						open = event;
					}
					else if (event.is(Type.REVOKED, group)) {
						if (open == null || open.term() != event.term()) {
							violation(event.nanoTime(), incarnation + " printed " + event + " but its open grant is "
									+ ((open != null) ? open : "none"));
						}
						else {
							windows.add(new Window(incarnation, group, open.term(), open.nanoTime(), event.nanoTime(),
									true));
						}
						open = null;
					}
				}
				if (open != null) {
					if (incarnation.wasKilled()) {
						long end = incarnation.process.deadBy().orElse(incarnation.killedAt);
						windows.add(new Window(incarnation, group, open.term(), open.nanoTime(), end, false));
					}
					else {
						violation(open.nanoTime(), incarnation + " was granted " + open
								+ " and never revoked it, though it was stopped gracefully");
					}
				}
			}
			windows.sort(Comparator.comparingLong(Window::grantedAt));
			for (int i = 1; i < windows.size(); i++) {
				Window before = windows.get(i - 1);
				Window after = windows.get(i);
				if (after.term() > before.term()) {
					continue;
				}
				if (after.term() == before.term() && after.node().equals(before.node()) && !before.revoked()) {
					this.sameTermRegrants++;
				}
				else {
					violation(after.grantedAt(),
							"Grants of " + group + " did not carry rising terms: " + before + " then " + after);
				}
			}
			return windows;
		}

		private void checkTermsInCommitOrder(String group) {
			Write previous = null;
			for (Write write : this.writes) {
				if (!write.group().equals(group)) {
					continue;
				}
				if (previous != null && write.term() < previous.term()) {
					violation(write.stampNanos(),
							"In commit (id) order the term of " + group + " went down: " + previous + " then " + write);
				}
				previous = write;
			}
		}

		private void checkOneWriterPerTerm(String group, List<Write> writes, String what) {
			Map<Long, Write> firstByTerm = new TreeMap<>();
			Set<String> granted = new HashSet<>();
			this.windows.get(group)
				.forEach((window) -> granted
					.add(window.node() + "#" + window.incarnation().number() + "@" + window.term()));
			for (Write write : writes) {
				if (!write.group().equals(group)) {
					continue;
				}
				Write first = firstByTerm.putIfAbsent(write.term(), write);
				if (first != null && !first.node().equals(write.node())) {
					violation(write.stampNanos(), "Term " + write.term() + " of " + group + " has committed " + what
							+ " of two nodes: " + first + " and " + write);
				}
				if (!granted.contains(write.node() + "#" + write.incarnation() + "@" + write.term())) {
					violation(write.stampNanos(), "Row " + write + " of the " + what + " was committed under a term "
							+ "that its incarnation was never granted");
				}
			}
		}

		private void checkOverlaps(String group) {
			List<Window> windows = this.windows.get(group);
			for (int i = 0; i < windows.size(); i++) {
				for (int j = i + 1; j < windows.size(); j++) {
					Window earlier = windows.get(i);
					Window later = windows.get(j);
					if (later.term() <= earlier.term() || !earlier.overlaps(later)) {
						continue;
					}
					this.overlaps++;
					long overlapEnd = Math.min(earlier.endedAt(), later.endedAt());
					Optional<Interval> excuse = pausedOrStalled(earlier.incarnation(), later.grantedAt(), overlapEnd)
						.or(() -> failedOver(later.grantedAt()))
						.or(() -> sessionEnded(group, earlier.incarnation(), later.grantedAt(), overlapEnd));
					long rejected = earlier.incarnation().process.events()
						.stream()
						.filter((event) -> event.is(Type.REJECTED, group) && event.term() == earlier.term())
						.count();
					this.staleAttemptsRejected += rejected;
					if (excuse.isEmpty()) {
						violation(later.grantedAt(), "Two nodes believed they led " + group
								+ " at once, and the earlier "
								+ "was neither frozen nor stalled just before (or stayed leader long after its thaw): "
								+ earlier + " and " + later + "; " + rejected
								+ " stale attempts of the earlier were rejected");
					}
				}
			}
		}

		private void checkNoStaleCommit(String group, List<Write> writes, String what) {
			if (FaultHistory.this.fence == Fence.FENCES_TABLE) {
				checkNoCommitAfterAHigherTerm(group, writes, what);
				return;
			}
			List<Window> windows = this.windows.get(group);
			Map<Long, Long> firstHigherGrant = new HashMap<>();
			for (Write write : writes) {
				if (!write.group().equals(group)) {
					continue;
				}
				long nextGrant = firstHigherGrant.computeIfAbsent(write.term(),
						(term) -> windows.stream()
							.filter((window) -> window.term() > term)
							.mapToLong(Window::grantedAt)
							.min()
							.orElse(Long.MAX_VALUE));
				if (write.stampNanos() - nextGrant > 0) {
					Window taker = windows.stream()
						.filter((window) -> window.grantedAt() == nextGrant)
						.findFirst()
						.orElseThrow();
					violation(write.stampNanos(), "A stale " + what + " committed: " + write + " was stamped "
							+ (write.stampNanos() - nextGrant) / 1_000_000 + " ms after " + taker + " was granted");
				}
			}
		}

		/**
		 * Checks the fences table's promise: no write of a term commits after a write of
		 * a higher term to the same resource (the group) has committed, measured both in
		 * commit (id) order, which {@link #checkTermsInCommitOrder} checks, and by the
		 * stamps.
		 */
		private void checkNoCommitAfterAHigherTerm(String group, List<Write> writes, String what) {
			Map<Long, Write> firstHigher = new HashMap<>();
			for (Write write : writes) {
				if (!write.group().equals(group)) {
					continue;
				}
				Write higher = firstHigher.computeIfAbsent(write.term(),
						(term) -> writes.stream()
							.filter((other) -> other.group().equals(group) && other.term() > term)
							.min(Comparator.comparingLong(Write::stampNanos))
							.orElse(null));
				if (higher != null && write.stampNanos() - higher.stampNanos() > 0) {
					violation(write.stampNanos(),
							"A stale " + what + " committed: " + write + " was stamped "
									+ (write.stampNanos() - higher.stampNanos()) / 1_000_000 + " ms after " + higher
									+ " of a higher term had advanced the fence");
				}
			}
		}

		/**
		 * Finds the pause or stall of the earlier holder that explains an overlap: the
		 * holder was frozen or stalled when the overlap began, or had been thawed only
		 * just before (a thawed JVM needs a moment to run its watchdog and print the
		 * revoke), and the overlap ended soon after the thaw.
		 */
		private Optional<Interval> pausedOrStalled(Incarnation incarnation, long overlapStart, long overlapEnd) {
			List<Interval> candidates = new ArrayList<>(incarnation.frozen);
			FaultHistory.this.stalls.stream()
				.filter((stall) -> stall.node().equals(incarnation.process.nodeId()))
				.forEach(candidates::add);
			return candidates.stream()
				.filter((interval) -> interval.from() - overlapStart <= 0
						&& overlapStart - (interval.to() + THAW_TOLERANCE_NANOS) <= 0
						&& overlapEnd - (interval.to() + THAW_TOLERANCE_NANOS) <= 0)
				.findFirst();
		}

		/**
		 * Finds the end of the earlier holder's sessions that explains an overlap in a
		 * group with crash takeover: a follower takes the lease over the moment the
		 * holder's session ends, and a holder that lives steps down only as it notices,
		 * within {@link #SESSION_NOTICE_NANOS}. The overlaps so excused are measured: the
		 * summary reports the longest.
		 */
		private Optional<Interval> sessionEnded(String group, Incarnation incarnation, long overlapStart,
				long overlapEnd) {
			if (!FaultHistory.this.crashTakeoverGroups.contains(group)
					|| overlapEnd - overlapStart > SESSION_NOTICE_NANOS) {
				return Optional.empty();
			}
			Optional<Interval> ended = FaultHistory.this.episodes.stream()
				.filter((episode) -> episode.node().equals(incarnation.process.nodeId())
						|| episode.node().equals(Episode.EVERY_NODE))
				.filter((episode) -> overlapStart - episode.startedAt() >= 0
						&& overlapStart - episode.liftedAt() - SESSION_NOTICE_NANOS <= 0)
				.map((episode) -> new Interval(episode.node(), episode.startedAt(), episode.liftedAt()))
				.findFirst();
			ended.ifPresent(
					(interval) -> this.sessionOverlapMax = Math.max(this.sessionOverlapMax, overlapEnd - overlapStart));
			return ended;
		}

		/**
		 * Finds the failover that explains an overlap: the promoted server lacks the
		 * renewals of the old primary's last moments, or the leases themselves when
		 * replication was cut, so it grants while the holder that renewed on the old
		 * primary still believes in its safe window, which lasts at most a lease past the
		 * promotion. Fencing makes that belief harmless: its writes reach no primary that
		 * accepts its term.
		 */
		private Optional<Interval> failedOver(long overlapStart) {
			return FaultHistory.this.episodes.stream()
				.filter((episode) -> episode.kind() == FaultKind.FAILOVER)
				.filter((episode) -> overlapStart - episode.startedAt() >= 0
						&& overlapStart - (episode.liftedAt() + FaultHistory.this.settings.duration().toNanos()) <= 0)
				.map((episode) -> new Interval(Episode.EVERY_NODE, episode.startedAt(), episode.liftedAt()))
				.findFirst();
		}

		private void checkFailover(String group) {
			List<Window> windows = this.windows.get(group);
			long confirm = FaultHistory.this.settings.renewInterval().toNanos();
			long[] stamps = this.writes.stream()
				.filter((write) -> write.group().equals(group))
				.mapToLong(Write::stampNanos)
				.sorted()
				.toArray();
			List<Episode> episodes = FaultHistory.this.episodes;
			for (int i = 0; i < episodes.size(); i++) {
				Episode episode = episodes.get(i);
				// A leadership counts once it lasts a renew interval, or until the next
				// fault or the end of the run.
				long horizon = (i + 1 < episodes.size()) ? episodes.get(i + 1).startedAt() : FaultHistory.this.endedAt;
				long recoveredAt = Long.MAX_VALUE;
				for (Window window : windows) {
					long from = Math.max(window.grantedAt(), episode.startedAt());
					Optional<Interval> frozen = window.incarnation().frozenAt(from);
					if (frozen.isPresent()) {
						from = frozen.get().to();
					}
					if (window.endedAt() - from >= confirm
							|| (window.endedAt() - horizon >= 0 && horizon - from >= 0)) {
						recoveredAt = Math.min(recoveredAt, from);
					}
				}
				if (episode.kind().hitsEveryNode()) {
					// Recovery from a server event is bounded by the harness's wait for a
					// healthy cluster, not by the lease.
					continue;
				}
				if (episode.heldTerms().containsKey(group)) {
					long failover = recoveredAt - episode.startedAt();
					if (recoveredAt == Long.MAX_VALUE || failover > failoverBound()) {
						violation(episode.startedAt(),
								"No leader of " + group + " within " + failoverBound() / 1_000_000
										+ " ms of the fault: " + ((recoveredAt != Long.MAX_VALUE)
												? "it took " + failover / 1_000_000 + " ms" : "none at all"));
					}
					if (recoveredAt != Long.MAX_VALUE) {
						this.failovers.add(failover);
						this.maxFailoverByKind.merge(episode.kind(), failover / 1_000_000, Math::max);
					}
				}
				long from = Math.max(episode.liftedAt(), (recoveredAt != Long.MAX_VALUE) ? recoveredAt : 0);
				OptionalLong resumed = firstAtOrAfter(stamps, from);
				if (resumed.isEmpty() || resumed.getAsLong() - from > FaultHistory.this.writeResumeBound.toNanos()) {
					violation(episode.startedAt(), "Writes of " + group + " did not resume within "
							+ FaultHistory.this.writeResumeBound.toMillis() + " ms of the fault being lifted with a "
							+ "leader in place"
							+ (resumed.isPresent()
									? ": the next came after " + (resumed.getAsLong() - from) / 1_000_000 + " ms"
									: ""));
				}
				else {
					this.writeResumes.add(resumed.getAsLong() - from);
				}
			}
		}

		private void checkTermsChangeOnlyOnFaultsOnTheLeader(String group) {
			List<Window> windows = this.windows.get(group);
			for (int i = 1; i < windows.size(); i++) {
				Window before = windows.get(i - 1);
				Window after = windows.get(i);
				if (after.term() <= before.term()) {
					continue; // a same-term regrant, or a violation that
								// pairGrantsAndRevokes reports
				}
				this.termChanges++;
				boolean stopping = FaultHistory.this.endedAt != Long.MAX_VALUE
						&& after.grantedAt() - FaultHistory.this.endedAt >= 0;
				if (stopping || faultOnHolder(before, after.grantedAt()).isPresent()) {
					continue;
				}
				this.termChangesWithoutFault++;
				violation(after.grantedAt(),
						"Terms changed without a fault on the leader: " + before + " (revoked " + revokeReason(before)
								+ ") then " + after + "; faults on " + before.node() + " nearby: "
								+ FaultHistory.this.episodes.stream()
									.filter((episode) -> episode.node().equals(before.node())
											&& Math.abs(episode.startedAt() - after.grantedAt()) < 10 * failoverBound())
									.map((episode) -> episode + " at " + millis(episode.startedAt()) + " ms")
									.toList());
			}
		}

		/**
		 * Finds the fault that explains why a term ended and another was granted at the
		 * given time: it hit the node of the earlier term before that node's window
		 * closed, and the grant came after the fault began and at most the failover bound
		 * after the node was back.
		 */
		private Optional<Episode> faultOnHolder(Window holder, long grantedAt) {
			return FaultHistory.this.episodes.stream()
				.filter((episode) -> episode.node().equals(holder.node()) || episode.kind().hitsEveryNode())
				.filter((episode) -> episode.startedAt() - holder.endedAt() < 0)
				.filter((episode) -> grantedAt - episode.startedAt() >= 0 && grantedAt - (backAt(episode)
						+ failoverBound() + (episode.kind().hitsEveryNode() ? SERVER_RECOVERY_NANOS : 0)) <= 0)
				.findFirst();
		}

		/**
		 * Returns when the node hit by a fault was back: when the fault was lifted or,
		 * after a kill, when the next incarnation of the node was ready.
		 */
		private long backAt(Episode episode) {
			if (episode.kind() != FaultKind.KILL) {
				return episode.liftedAt();
			}
			return FaultHistory.this.incarnations.stream()
				.filter((incarnation) -> incarnation.process.nodeId().equals(episode.node()))
				.flatMap(
						(incarnation) -> incarnation.process.firstEvent((event) -> event.type() == Type.READY).stream())
				.mapToLong(NodeEvent::nanoTime)
				.filter((ready) -> ready - episode.startedAt() >= 0)
				.min()
				.orElse(episode.liftedAt());
		}

		private String revokeReason(Window window) {
			if (!window.revoked()) {
				return "never, killed";
			}
			return window.incarnation().process.events()
				.stream()
				.filter((event) -> event.is(Type.REVOKED, window.group()) && event.term() == window.term())
				.map(NodeEvent::reason)
				.findFirst()
				.orElse("?");
		}

		private static OptionalLong firstAtOrAfter(long[] sorted, long time) {
			int low = 0;
			int high = sorted.length;
			while (low < high) {
				int middle = (low + high) >>> 1;
				if (sorted[middle] - time < 0) {
					low = middle + 1;
				}
				else {
					high = middle;
				}
			}
			return (low < sorted.length) ? OptionalLong.of(sorted[low]) : OptionalLong.empty();
		}

		private long failoverBound() {
			return FaultHistory.this.failoverBound().toNanos();
		}

		private void violation(long at, String message) {
			this.violations.add(FaultHistory.this.episodeAt(at) + ": " + message);
		}

		private static long percentile(List<Long> values, int percentile) {
			if (values.isEmpty()) {
				return 0;
			}
			List<Long> sorted = values.stream().sorted().toList();
			int index = (int) Math.ceil(percentile / 100.0 * sorted.size()) - 1;
			return sorted.get(Math.max(0, Math.min(index, sorted.size() - 1))) / 1_000_000;
		}

	}

}
