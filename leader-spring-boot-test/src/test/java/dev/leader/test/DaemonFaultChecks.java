package dev.leader.test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import javax.sql.DataSource;

import dev.leader.test.FaultHistory.Episode;
import dev.leader.test.FaultHistory.FaultKind;
import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.core.simple.JdbcClient;

/**
 * The checkers of a daemon fault run, over the writes that {@link DaemonTestNode} agents
 * committed to its {@link DaemonTestNode#WRITES_TABLE table} and the episodes of a
 * {@link FaultHistory} whose {@link Episode#heldTerms()} are the daemons that ran on the
 * node hit, with their generations.
 * <ol>
 * <li><b>Generations in commit order.</b> Per daemon, the generations of the committed
 * writes never decrease in id order. Ids are commit order across generations: a write
 * draws its id by its {@code INSERT}, after its guard locked the assignment row
 * {@code FOR SHARE}; every change of the assignment (revoke, release, reclaim, the next
 * assignment) is an {@code UPDATE} of that row and waits until the guarded transactions
 * of the generation have ended, and a write of a later generation guards only after its
 * assignment committed.</li>
 * <li><b>Windows never overlap.</b> Per daemon, the writes of two generations never
 * interleave, neither by id (commit order) nor by stamp ({@link System#nanoTime()} after
 * the guard passed).</li>
 * <li><b>One incarnation per generation.</b> The committed writes of a generation come
 * from one process: one node id and one incarnation; reported once per further
 * process.</li>
 * <li><b>No stale write.</b> No write of a generation is stamped after the first write of
 * a higher generation of the daemon.</li>
 * <li><b>Reassignment.</b> After every fault, every daemon that ran on the node hit runs
 * again within the bound: a write of a higher generation stamped after the fault began,
 * or of the same generation stamped after the fault was lifted, at most the bound after
 * the fault began.</li>
 * </ol>
 */
public final class DaemonFaultChecks {

	private final FaultHistory history;

	private final List<Write> writes;

	private final long bound;

	private final List<String> violations = new ArrayList<>();

	private final List<Long> reassignments = new ArrayList<>();

	private final Map<FaultKind, List<Long>> reassignmentsByKind = new EnumMap<>(FaultKind.class);

	private int generations;

	/**
	 * Runs every checker.
	 * @param history the history of the run, every episode recorded
	 * @param writes the committed writes, in id order, see {@link #readWrites}
	 * @param reassignmentBound how soon after a fault every daemon of the node hit must
	 * run again, or {@code null} to check only that daemons ran exclusively (G4), for a
	 * history whose episodes do not name the daemons they hit
	 */
	public DaemonFaultChecks(FaultHistory history, List<Write> writes, @Nullable Duration reassignmentBound) {
		this.history = history;
		this.writes = List.copyOf(writes);
		this.bound = (reassignmentBound != null) ? reassignmentBound.toNanos() : -1;
		Map<String, List<Write>> byDaemon = new TreeMap<>();
		this.writes
			.forEach((write) -> byDaemon.computeIfAbsent(write.daemon(), (daemon) -> new ArrayList<>()).add(write));
		byDaemon.forEach((daemon, daemonWrites) -> {
			checkGenerationsInCommitOrder(daemonWrites);
			checkOneIncarnationPerGeneration(daemonWrites);
			List<Window> windows = windows(daemonWrites);
			this.generations += windows.size();
			checkWindowsDoNotOverlap(windows);
			checkNoStaleWrite(daemonWrites, windows);
		});
		if (this.bound >= 0) {
			checkReassignments(byDaemon);
		}
	}

	/**
	 * Reads every committed write, in id order.
	 * @param dataSource a data source on the test's schema
	 * @return the writes
	 */
	public static List<Write> readWrites(DataSource dataSource) {
		return JdbcClient.create(dataSource)
			.sql("SELECT id, daemon, generation, node, incarnation, stamp_nanos FROM %s WHERE kind = 'W' ORDER BY id"
				.formatted(DaemonTestNode.WRITES_TABLE))
			.query((rows, i) -> new Write(rows.getLong(1), rows.getString(2), rows.getLong(3), rows.getString(4),
					rows.getLong(5), rows.getLong(6)))
			.list();
	}

	/**
	 * Returns every violation found.
	 * @return the violations, empty for a correct run
	 */
	public List<String> violations() {
		return List.copyOf(this.violations);
	}

	/**
	 * Returns the reassignment times: per fault and daemon that ran on the node hit, how
	 * long until it ran again.
	 * @return the times in nanoseconds, in episode order
	 */
	public List<Long> reassignments() {
		return List.copyOf(this.reassignments);
	}

	/**
	 * Returns a one-line summary of the run.
	 * @param seed the seed of the run
	 * @param rejected how many writes the guard rejected
	 * @param elapsed how long the run took
	 * @return the summary
	 */
	public String summary(long seed, long rejected, Duration elapsed) {
		Map<FaultKind, Long> kinds = new EnumMap<>(FaultKind.class);
		for (FaultKind kind : FaultKind.values()) {
			kinds.put(kind, 0L);
		}
		List<Episode> episodes = this.history.episodes();
		episodes.forEach((episode) -> kinds.merge(episode.kind(), 1L, Long::sum));
		List<Long> sorted = this.reassignments.stream().sorted().toList();
		return String.format(
				"Daemon fault run: seed=%d episodes=%d faults=%s daemons-hit=%d violations=%d "
						+ "writes-committed=%d writes-rejected=%d generations=%d reassignment-min=%dms "
						+ "reassignment-median=%dms reassignment-max=%dms (n=%d, bound %dms) "
						+ "reassignment-median-and-max-by-fault-ms=%s elapsed=%ds",
				seed, episodes.size(), kinds, episodes.stream().mapToInt((episode) -> episode.heldTerms().size()).sum(),
				this.violations.size(), this.writes.size(), rejected, this.generations, millis(sorted, 0),
				millis(sorted, sorted.size() / 2), millis(sorted, sorted.size() - 1), sorted.size(),
				this.bound / 1_000_000, medianAndMaxByKind(), elapsed.toSeconds());
	}

	private Map<FaultKind, String> medianAndMaxByKind() {
		Map<FaultKind, String> byKind = new EnumMap<>(FaultKind.class);
		this.reassignmentsByKind.forEach((kind, took) -> {
			List<Long> sorted = took.stream().sorted().toList();
			byKind.put(kind, sorted.get(sorted.size() / 2) + "/" + sorted.get(sorted.size() - 1));
		});
		return byKind;
	}

	/**
	 * Returns a short summary of the exclusivity checks.
	 * @return the summary
	 */
	public String exclusivitySummary() {
		return "daemon-writes-committed=" + this.writes.size() + " daemon-generations=" + this.generations
				+ " daemon-violations=" + this.violations.size();
	}

	private void checkGenerationsInCommitOrder(List<Write> daemonWrites) {
		for (int i = 1; i < daemonWrites.size(); i++) {
			Write previous = daemonWrites.get(i - 1);
			Write write = daemonWrites.get(i);
			if (write.generation() < previous.generation()) {
				violation(write.stampNanos(), "In commit (id) order the generation of " + write.daemon()
						+ " went down: " + previous + " then " + write);
			}
		}
	}

	private void checkOneIncarnationPerGeneration(List<Write> daemonWrites) {
		Map<Long, Write> first = new LinkedHashMap<>();
		Set<String> reported = new HashSet<>();
		for (Write write : daemonWrites) {
			Write earlier = first.putIfAbsent(write.generation(), write);
			if (earlier != null
					&& (!earlier.node().equals(write.node()) || earlier.incarnation() != write.incarnation())
					&& reported.add(write.generation() + " " + write.node() + "#" + write.incarnation())) {
				violation(write.stampNanos(), "Generation " + write.generation() + " of " + write.daemon()
						+ " has committed writes of two processes: " + earlier + " and " + write);
			}
		}
	}

	private void checkWindowsDoNotOverlap(List<Window> windows) {
		for (int i = 0; i < windows.size(); i++) {
			for (int j = i + 1; j < windows.size(); j++) {
				Window earlier = windows.get(i);
				Window later = windows.get(j);
				if (earlier.firstId() <= later.lastId() && later.firstId() <= earlier.lastId()) {
					violation(later.firstStamp(), "Two generations of " + later.daemon()
							+ " committed interleaved writes (by id): " + earlier + " and " + later);
				}
				if (earlier.firstStamp() - later.lastStamp() <= 0 && later.firstStamp() - earlier.lastStamp() <= 0) {
					violation(later.firstStamp(), "Two generations of " + later.daemon()
							+ " wrote in overlapping windows (by stamp): " + earlier + " and " + later);
				}
			}
		}
	}

	private void checkNoStaleWrite(List<Write> daemonWrites, List<Window> windows) {
		// Per generation, the first stamp of any higher generation: a suffix minimum over
		// the windows.
		Map<Long, Long> nextStart = new TreeMap<>();
		long earliest = Long.MAX_VALUE;
		for (int i = windows.size() - 1; i >= 0; i--) {
			nextStart.put(windows.get(i).generation(), earliest);
			earliest = (earliest == Long.MAX_VALUE || windows.get(i).firstStamp() - earliest < 0)
					? windows.get(i).firstStamp() : earliest;
		}
		for (Write write : daemonWrites) {
			long higher = nextStart.get(write.generation());
			if (higher != Long.MAX_VALUE && write.stampNanos() - higher > 0) {
				violation(write.stampNanos(),
						"A stale write committed: " + write + " was stamped "
								+ (write.stampNanos() - higher) / 1_000_000 + " ms after a higher generation of "
								+ write.daemon() + " began writing");
			}
		}
	}

	private void checkReassignments(Map<String, List<Write>> byDaemon) {
		for (Episode episode : this.history.episodes()) {
			episode.heldTerms().forEach((daemon, generation) -> {
				long ranAgain = Long.MAX_VALUE;
				for (Write write : byDaemon.getOrDefault(daemon, List.of())) {
					boolean resumed = (write.generation() > generation && write.stampNanos() - episode.startedAt() > 0)
							|| (write.generation() == generation && write.stampNanos() - episode.liftedAt() >= 0);
					if (resumed && (ranAgain == Long.MAX_VALUE || write.stampNanos() - ranAgain < 0)) {
						ranAgain = write.stampNanos();
					}
				}
				long took = ranAgain - episode.startedAt();
				if (ranAgain == Long.MAX_VALUE || took > this.bound) {
					violation(episode.startedAt(),
							"Daemon " + daemon + " (generation " + generation + ") did not run again within "
									+ this.bound / 1_000_000 + " ms of the fault: "
									+ ((ranAgain != Long.MAX_VALUE) ? "it took " + took / 1_000_000 + " ms" : "never"));
				}
				if (ranAgain != Long.MAX_VALUE) {
					this.reassignments.add(took);
					this.reassignmentsByKind.computeIfAbsent(episode.kind(), (kind) -> new ArrayList<>())
						.add(took / 1_000_000);
				}
			});
		}
	}

	private static List<Window> windows(List<Write> daemonWrites) {
		Map<Long, Window> byGeneration = new TreeMap<>();
		for (Write write : daemonWrites) {
			byGeneration.merge(write.generation(), new Window(write), Window::extend);
		}
		return List.copyOf(byGeneration.values());
	}

	private void violation(long at, String message) {
		this.violations.add(this.history.episodeAt(at) + ": " + message);
	}

	private static long millis(List<Long> sorted, int index) {
		return sorted.isEmpty() ? 0 : sorted.get(index) / 1_000_000;
	}

	/**
	 * A committed fenced write of a daemon agent.
	 *
	 * @param id the row id, drawn in commit order across generations
	 * @param daemon the daemon
	 * @param generation the generation its guard checked
	 * @param node the writing node
	 * @param incarnation the writing process of that node id
	 * @param stampNanos {@link System#nanoTime()} after the guard passed, before the
	 * commit
	 */
	public record Write(long id, String daemon, long generation, String node, long incarnation, long stampNanos) {

		@Override
		public String toString() {
			return "write " + this.id + " of " + this.daemon + " generation " + this.generation + " by " + this.node
					+ "#" + this.incarnation + " at " + FaultHistory.millis(this.stampNanos) + " ms";
		}

	}

	/**
	 * The committed writes of one generation of a daemon, by id and by stamp.
	 */
	private record Window(String daemon, long generation, long firstId, long lastId, long firstStamp, long lastStamp,
			long writes) {

		Window(Write write) {
			this(write.daemon(), write.generation(), write.id(), write.id(), write.stampNanos(), write.stampNanos(), 1);
		}

		Window extend(Window other) {
			return new Window(this.daemon, this.generation, Math.min(this.firstId, other.firstId),
					Math.max(this.lastId, other.lastId),
					(other.firstStamp - this.firstStamp < 0) ? other.firstStamp : this.firstStamp,
					(other.lastStamp - this.lastStamp > 0) ? other.lastStamp : this.lastStamp,
					this.writes + other.writes);
		}

		@Override
		public String toString() {
			return "generation " + this.generation + " [ids " + this.firstId + ".." + this.lastId + ", "
					+ FaultHistory.millis(this.firstStamp) + ".." + FaultHistory.millis(this.lastStamp) + " ms, "
					+ this.writes + " writes]";
		}

	}

}
