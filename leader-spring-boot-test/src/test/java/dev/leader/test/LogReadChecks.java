package dev.leader.test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import javax.sql.DataSource;

import dev.leader.test.FaultHistory.Episode;
import dev.leader.test.FaultHistory.Write;

import org.springframework.jdbc.core.RowCallbackHandler;
import org.springframework.jdbc.core.simple.JdbcClient;

/**
 * The checkers of the followers of a fault run, over what {@link FollowedLog} recorded on
 * every node and over the surviving decision log, read from the database at the end:
 * <ol>
 * <li><b>Applied prefix.</b> Every node's final applied sequence (index and term of every
 * entry, summed up by {@link FollowedLog#chain}) is a prefix of the surviving log, unless
 * the node reported its log halted or diverged.</li>
 * <li><b>Served state.</b> The state a read was served from is a prefix of the surviving
 * log, unless a failover that lost entries ({@link FaultHistory.FaultKind#FAILOVER}, on
 * an asynchronous standby) came after the read began or ended only just before it: the
 * promotion's acceptance plus the read's {@linkplain #allowance allowance}. Before that
 * failover, the entries it lost were committed; after it, a node must have found them
 * lost.</li>
 * <li><b>Bookmark reads.</b> A read served at a bookmark saw an applied index at or after
 * the bookmark's, with the bookmark's term at that index.</li>
 * <li><b>Bounded and read-index reads.</b> A read served within staleness bound B (0 for
 * a read index) saw every entry of the surviving log committed more than B before the
 * read began. An entry's commit is bounded from above by the stamp of the next committed
 * write of the same writer process: {@link FencedWriter} writes one transaction at a
 * time, so that stamp is taken after the entry's commit returned. An entry with no later
 * write of its process has no bound and is not counted. Every time is the
 * {@link System#nanoTime()} that the test and every node share, so no clock of the
 * database is needed.</li>
 * </ol>
 */
public final class LogReadChecks {

	private final FaultHistory history;

	private final Duration discovery;

	private final Map<String, long[]> hashes = new HashMap<>();

	private final Map<String, long[][]> committedBefore = new HashMap<>();

	private final List<String> violations = new ArrayList<>();

	private final Map<String, Long> served = new TreeMap<>();

	private long rewinds;

	private long finals;

	private long halted;

	private long tolerated;

	/**
	 * Runs every checker.
	 * @param history the run's history, with its failovers among the episodes
	 * @param files the read records of every incarnation
	 * @param dataSource the cluster's database, after the run
	 * @param writes the committed writes of the fenced writers
	 * @param discovery how long after a failover's promotion a node may still serve from
	 * the entries it lost without a read of the database: a heartbeat or two
	 */
	public LogReadChecks(FaultHistory history, List<Path> files, DataSource dataSource, List<Write> writes,
			Duration discovery) {
		this.history = history;
		this.discovery = discovery;
		readSurvivingLog(dataSource, writes);
		for (Path file : files) {
			check(file);
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
	 * Returns a short summary of what was checked.
	 * @return the summary
	 */
	public String summary() {
		return "reads-served=" + this.served + " reads-before-a-lossy-failover=" + this.tolerated + " rewinds="
				+ this.rewinds + " final-states=" + this.finals + " final-states-halted=" + this.halted
				+ " read-violations=" + this.violations.size();
	}

	private void readSurvivingLog(DataSource dataSource, List<Write> writes) {
		Map<String, Long> upperBounds = commitUpperBounds(writes);
		Map<String, List<long[]>> entries = new TreeMap<>();
		JdbcClient.create(dataSource)
			.sql("SELECT group_name, log_index, term, payload FROM leader_log_entries ORDER BY group_name, log_index")
			.query((RowCallbackHandler) (row) -> entries.computeIfAbsent(row.getString(1), (group) -> new ArrayList<>())
				.add(new long[] { row.getLong(2), row.getLong(3),
						upperBounds.getOrDefault(row.getString(1) + " " + row.getString(4), Long.MAX_VALUE) }));
		entries.forEach((group, rows) -> {
			long[] chain = new long[rows.size() + 1];
			for (int i = 0; i < rows.size(); i++) {
				if (rows.get(i)[0] != i + 1) {
					this.violations
						.add("The surviving log of " + group + " has index " + rows.get(i)[0] + " in place " + (i + 1));
				}
				chain[i + 1] = FollowedLog.chain(chain[i], i + 1, rows.get(i)[1]);
			}
			this.hashes.put(group, chain);
			// (commit upper bound, highest index committed by then), by bound
			long[][] byBound = rows.stream()
				.filter((row) -> row[2] != Long.MAX_VALUE)
				.map((row) -> new long[] { row[2], row[0] })
				.sorted((a, b) -> Long.compare(a[0] - b[0], 0))
				.toArray(long[][]::new);
			for (int i = 1; i < byBound.length; i++) {
				byBound[i][1] = Math.max(byBound[i][1], byBound[i - 1][1]);
			}
			this.committedBefore.put(group, byBound);
		});
	}

	/**
	 * Per write, by {@code "<group> <incarnation>/<seq>"}, the stamp of its process's
	 * next committed write, of any group.
	 */
	private static Map<String, Long> commitUpperBounds(List<Write> writes) {
		Map<Long, List<Write>> byIncarnation = new HashMap<>();
		writes.forEach((write) -> byIncarnation.computeIfAbsent(write.incarnation(), (number) -> new ArrayList<>())
			.add(write));
		Map<String, Long> bounds = new HashMap<>();
		byIncarnation.values().forEach((list) -> {
			list.sort((a, b) -> Long.compare(a.seq(), b.seq()));
			for (int i = 0; i + 1 < list.size(); i++) {
				Write write = list.get(i);
				bounds.put(write.group() + " " + write.incarnation() + "/" + write.seq(), list.get(i + 1).stampNanos());
			}
		});
		return bounds;
	}

	private void check(Path file) {
		List<String> lines;
		try {
			lines = Files.exists(file) ? Files.readAllLines(file) : List.of();
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		String node = file.getFileName().toString();
		for (String line : lines) {
			String[] f = line.split(" ");
			switch (f[0]) {
				case "R" -> checkRead(node, f);
				case "D" -> this.rewinds++;
				case "A" -> checkFinal(node, f);
				default -> this.violations.add(node + ": unreadable record '" + line + "'");
			}
		}
	}

	private void checkRead(String node, String[] f) {
		String kind = f[1];
		String group = f[2];
		long start = Long.parseLong(f[3]);
		long wantIndex = Long.parseLong(f[5]);
		long wantTerm = Long.parseLong(f[6]);
		long bound = Long.parseLong(f[7]);
		long index = Long.parseLong(f[8]);
		long hash = Long.parseLong(f[9]);
		long termAtWant = Long.parseLong(f[10]);
		this.served.merge(kind, 1L, Long::sum);
		String read = node + "'s " + kind + " read of " + group + " begun " + this.history.episodeAt(start);
		if (kind.equals(FollowedLog.BOOKMARK) && (index < wantIndex || termAtWant != wantTerm)) {
			this.violations.add(read + " was served at bookmark " + wantTerm + "." + wantIndex + " with the entries "
					+ "through " + index + " applied, term " + termAtWant + " at the bookmark's index");
		}
		if (!isPrefix(group, index, hash)) {
			if (beforeALossyFailover(start, allowance(kind, bound))) {
				this.tolerated++;
			}
			else {
				this.violations.add(read + " was served from entries 1.." + index
						+ " that are not a prefix of the surviving log (" + length(group) + " entries)");
			}
		}
		if (!kind.equals(FollowedLog.BOOKMARK)) {
			long needed = committedBefore(group, start - bound);
			if (index < needed) {
				this.violations.add(read + " with bound " + bound / 1_000_000 + " ms saw entries through " + index
						+ ", but entry " + needed + " had committed more than the bound before it began");
			}
		}
	}

	private void checkFinal(String node, String[] f) {
		String group = f[1];
		long index = Long.parseLong(f[3]);
		long hash = Long.parseLong(f[4]);
		this.finals++;
		if (!"-".equals(f[5])) {
			this.halted++;
			return;
		}
		if (!isPrefix(group, index, hash)) {
			this.violations.add(node + " ended with entries 1.." + index + " of " + group
					+ " applied, which are not a prefix of the surviving log (" + length(group)
					+ " entries), and it did not report its log diverged");
		}
	}

	private boolean isPrefix(String group, long index, long hash) {
		long[] chain = this.hashes.getOrDefault(group, new long[] { 0 });
		return index < chain.length && chain[(int) index] == hash;
	}

	private int length(String group) {
		return this.hashes.getOrDefault(group, new long[] { 0 }).length - 1;
	}

	private long committedBefore(String group, long time) {
		long[][] byBound = this.committedBefore.getOrDefault(group, new long[0][]);
		int low = 0;
		int high = byBound.length;
		while (low < high) {
			int middle = (low + high) >>> 1;
			if (byBound[middle][0] - time < 0) {
				low = middle + 1;
			}
			else {
				high = middle;
			}
		}
		return (low == 0) ? 0 : byBound[low - 1][1];
	}

	/**
	 * How long after a lossy failover's promotion a read may still be served from lost
	 * entries: none for a read index, which reads the new primary's head; a bookmark or
	 * bounded read may be served locally, until a heartbeat shows the node the new log,
	 * and a bounded one for its bound on top.
	 */
	private long allowance(String kind, long bound) {
		return kind.equals(FollowedLog.READ_INDEX) ? 0 : this.discovery.toNanos() + bound;
	}

	private boolean beforeALossyFailover(long start, long allowance) {
		for (Episode episode : this.history.episodes()) {
			if (episode.kind() == FaultHistory.FaultKind.FAILOVER && episode.detail().contains("lost")
					&& start - (episode.liftedAt() + allowance) <= 0) {
				return true;
			}
		}
		return false;
	}

	/**
	 * Returns the read records in a directory: one file per incarnation.
	 * @param directory the directory
	 * @return the files, none if the directory is missing
	 */
	public static List<Path> files(Path directory) {
		try (var paths = Files.list(directory)) {
			return paths.sorted().toList();
		}
		catch (IOException ex) {
			return List.of();
		}
	}

	@Override
	public String toString() {
		return summary() + " " + Arrays.toString(this.violations.toArray());
	}

}
