package dev.leader.test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import javax.sql.DataSource;

import dev.leader.log.Bookmark;
import dev.leader.log.DecisionLog;
import dev.leader.log.LogApplier;
import dev.leader.log.LogEntry;
import dev.leader.log.LogStore;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The decision logs as a {@link TestNode} started with {@code --follow=true} follows
 * them: an applier per group that records each applied entry's index and term, and a
 * reader thread that, every interval, serves one read of each group in turn at bookmark,
 * bounded-staleness and read-index consistency, and records what each served read saw.
 * The records go to a file of the incarnation's ({@code reads-file}), a line each,
 * flushed at once so that a killed node leaves them; {@link LogReadChecks} reads them
 * back. Times are {@link System#nanoTime()}, the clock the test and every node share.
 * <pre>
 * R kind group start served wantIndex wantTerm boundNanos appliedIndex appliedHash termAtWant
 * D group at commonIndex returnedIndex     the applier rewound past entries a failover lost
 * A group at appliedIndex appliedHash failure   at a graceful stop; failure is '-' or a class name
 * </pre> A bookmark read asks for the group's last entry as the node's own pool reads it
 * from {@code leader_log_entries}, so it runs in the pool's isolation and auto-commit.
 * The applied state is summed up by {@link #chain}, over every (index, term) applied, so
 * that a checker compares it with the surviving log's at the same index.
 * <p>
 * The applier implements {@code LogApplier.rewind}: it drops the entries after the last
 * one the log still holds, and the tail applies the surviving log from there.
 */
final class FollowedLog {

	static final String BOOKMARK = "bookmark";

	static final String BOUNDED = "bounded";

	static final String READ_INDEX = "read-index";

	private static final Duration WAIT = Duration.ofSeconds(1);

	private final DecisionLog log;

	private final Map<String, AppliedState> states = new LinkedHashMap<>();

	private final JdbcTemplate jdbc;

	private final Writer out;

	private final Duration interval;

	private final List<Duration> bounds;

	private final AtomicLong reads = new AtomicLong();

	private final ScheduledExecutorService reader = Executors.newSingleThreadScheduledExecutor((runnable) -> {
		Thread thread = new Thread(runnable, "test-node-reader");
		thread.setDaemon(true);
		return thread;
	});

	FollowedLog(LogStore store, String nodeId, List<String> groups, DataSource dataSource, Path file, Duration interval,
			List<Duration> bounds) {
		try {
			Files.createDirectories(file.getParent());
			this.out = Files.newBufferedWriter(file, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
					StandardOpenOption.APPEND);
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not open " + file, ex);
		}
		groups.forEach((group) -> this.states.put(group, new AppliedState(group)));
		this.log = new DecisionLog(store, nodeId, List.copyOf(this.states.values()));
		this.jdbc = new JdbcTemplate(dataSource);
		this.jdbc.setQueryTimeout(1);
		this.interval = interval;
		this.bounds = List.copyOf(bounds);
	}

	/**
	 * Sums up an applied sequence: the value after applying {@code (index, term)} to a
	 * state whose value was {@code previous}; 0 for the empty state.
	 */
	static long chain(long previous, long index, long term) {
		long mixed = previous * 0x9E3779B97F4A7C15L + index * 0xC2B2AE3D27D4EB4FL + term;
		mixed ^= (mixed >>> 31);
		mixed *= 0xBF58476D1CE4E5B9L;
		return mixed ^ (mixed >>> 29);
	}

	void start() {
		this.log.start();
		this.reader.scheduleWithFixedDelay(this::readRound, this.interval.toNanos(), this.interval.toNanos(),
				TimeUnit.NANOSECONDS);
	}

	/**
	 * Stops reading and applying, and records each group's final applied state.
	 */
	void stop() {
		this.reader.shutdownNow();
		try {
			this.reader.awaitTermination(5, TimeUnit.SECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		this.log.stop();
		this.states.forEach((group, state) -> {
			Snapshot applied = state.snapshot(0);
			String failure = this.log.failure(group).map((ex) -> ex.getClass().getSimpleName()).orElse("-");
			record("A " + group + " " + System.nanoTime() + " " + applied.index() + " " + applied.hash() + " "
					+ failure);
		});
	}

	private void readRound() {
		for (String group : this.states.keySet()) {
			long number = this.reads.getAndIncrement();
			int kind = (int) (number % (2 + this.bounds.size()));
			try {
				if (kind == 0) {
					readAtBookmark(group);
				}
				else if (kind == 1) {
					readAtIndex(group);
				}
				else {
					readWithin(group, this.bounds.get(kind - 2));
				}
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				return;
			}
			catch (RuntimeException ex) {
				// Not served: a diverged or halted log, a lost session, a timeout. Only
				// served reads are checked.
			}
		}
	}

	private void readAtBookmark(String group) throws InterruptedException {
		List<Bookmark> last = this.jdbc.query(
				"SELECT log_index, term FROM leader_log_entries WHERE group_name = ? ORDER BY log_index DESC LIMIT 1",
				(row, i) -> new Bookmark(group, row.getLong(2), row.getLong(1)), group);
		if (last.isEmpty()) {
			return;
		}
		Bookmark bookmark = last.get(0);
		long start = System.nanoTime();
		if (this.log.awaitApplied(bookmark, WAIT)) {
			served(BOOKMARK, group, start, bookmark.index(), bookmark.term(), 0);
		}
	}

	private void readAtIndex(String group) throws InterruptedException {
		long start = System.nanoTime();
		if (this.log.awaitReadIndex(group, WAIT)) {
			served(READ_INDEX, group, start, 0, 0, 0);
		}
	}

	private void readWithin(String group, Duration bound) throws InterruptedException {
		long start = System.nanoTime();
		if (this.log.awaitStaleness(group, bound, WAIT)) {
			served(BOUNDED, group, start, 0, 0, bound.toNanos());
		}
	}

	private void served(String kind, String group, long start, long wantIndex, long wantTerm, long bound) {
		long served = System.nanoTime();
		Snapshot applied = this.states.get(group).snapshot(wantIndex);
		record("R " + kind + " " + group + " " + start + " " + served + " " + wantIndex + " " + wantTerm + " " + bound
				+ " " + applied.index() + " " + applied.hash() + " " + applied.termAtWant());
	}

	private void record(String line) {
		synchronized (this.out) {
			try {
				this.out.write(line);
				this.out.write('\n');
				this.out.flush();
			}
			catch (IOException ex) {
				System.err.println("Could not record a read: " + ex);
			}
		}
	}

	/**
	 * What a group's applier has applied, at one moment.
	 *
	 * @param index the last index applied, 0 for none
	 * @param hash the {@link #chain} of the applied entries
	 * @param termAtWant the term of the applied entry at the index asked about, 0 if none
	 */
	record Snapshot(long index, long hash, long termAtWant) {
	}

	/**
	 * A group's applier: the applied terms by index, and their chain.
	 */
	private final class AppliedState implements LogApplier {

		private final String group;

		private final List<Long> terms = new ArrayList<>();

		private final List<Long> hashes = new ArrayList<>();

		AppliedState(String group) {
			this.group = group;
		}

		@Override
		public String group() {
			return this.group;
		}

		@Override
		public synchronized void apply(LogEntry entry) {
			if (entry.index() != this.terms.size() + 1) {
				throw new IllegalStateException(
						"Entry " + entry.index() + " of " + this.group + " applied after entry " + this.terms.size());
			}
			long previous = this.hashes.isEmpty() ? 0 : this.hashes.get(this.hashes.size() - 1);
			this.terms.add(entry.term());
			this.hashes.add(chain(previous, entry.index(), entry.term()));
		}

		/**
		 * Drops the entries after the common one: this state is built from the log alone.
		 * @param common the last entry applied that the log still holds
		 * @return its index
		 */
		@Override
		public long rewind(Bookmark common) {
			long kept;
			synchronized (this) {
				kept = Math.min(common.index(), this.terms.size());
				while (this.terms.size() > kept) {
					this.terms.remove(this.terms.size() - 1);
					this.hashes.remove(this.hashes.size() - 1);
				}
			}
			record("D " + this.group + " " + System.nanoTime() + " " + common.index() + " " + kept);
			return kept;
		}

		synchronized Snapshot snapshot(long want) {
			int size = this.terms.size();
			long termAtWant = (want >= 1 && want <= size) ? this.terms.get((int) want - 1) : 0;
			return new Snapshot(size, (size > 0) ? this.hashes.get(size - 1) : 0, termAtWant);
		}

	}

}
