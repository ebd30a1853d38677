package dev.leader.log;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import dev.leader.FencingToken;
import dev.leader.node.FailureWarnings;
import dev.leader.node.OwnThreads;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * A node's tail of one group's log: the {@code leader-log-<group>} thread reads the
 * entries that follow the last one applied and applies each, in order, to the group's
 * appliers. It reads when it learns of an index beyond the one applied (a notification, a
 * read index), when a read of the log's end disagrees with what it applied, and once at
 * start. Every field below is guarded by this object's monitor, which the thread never
 * holds while it reads or applies.
 * <p>
 * Each read starts at the last entry applied and checks that the log still holds it, with
 * the same term (Raft's check of the previous entry): a failover of the database to an
 * asynchronous standby can lose entries this node applied, and the new leader then
 * appends others at their indexes. When the check fails, the group has
 * {@linkplain LogDivergedException diverged} here: reads fail until the thread has found
 * the last entry that both histories share and the appliers have
 * {@linkplain LogApplier#rewind rewound} to it or before it; then each applier gets the
 * log's entries after the index it returned.
 * <p>
 * Each read of the log's end is a confirmation for the {@link StalenessEstimate}.
 * <p>
 * With {@linkplain LogRetention retention}, the same thread removes old entries while
 * this node leads the group: it wakes once per retention interval for it, and asks for
 * the group's token outside the monitor, since the store's listener may call this object
 * while the engine holds its lock. A read that finds entries missing at the start of what
 * it asked for reads where the log was truncated and resets the appliers there.
 * <p>
 * {@link #stop()} ends the thread once the entry being applied is done; a
 * {@link #start()} after it starts a thread that first waits for the old one to end, so
 * that entries are applied in order, once, across a stop and a start.
 */
final class GroupTail {

	private static final Log logger = LogFactory.getLog(DecisionLog.class);

	private static final int BATCH = 500;

	private static final long STOP_WAIT_MILLIS = TimeUnit.SECONDS.toMillis(5);

	private final String group;

	private final String nodeId;

	private final List<LogApplier> appliers;

	private final LogStore store;

	private final GroupRetention retention;

	private volatile LogMonitor monitor = LogMonitor.NONE;

	private long applied;

	private long appliedTerm;

	// The index each applier's state stands at beyond the index applied, after a rewind.
	private final long[] ahead;

	private final AppliedTerms terms;

	private long known;

	private final LogSightings sightings = new LogSightings();

	private boolean readWanted = true;

	private final StalenessEstimate staleness = new StalenessEstimate();

	// Called on the tail's thread only.
	private final FailureWarnings readFailures;

	private @Nullable Throwable failure;

	private @Nullable LogDivergedException divergence;

	private boolean stopped = true;

	// Counts the starts: a thread of an earlier start stops applying.
	private long run;

	private @Nullable Thread thread;

	GroupTail(String group, String nodeId, List<LogApplier> appliers, LogStore store, LogRetention retention,
			Function<String, Optional<FencingToken>> leading) {
		this.group = group;
		this.nodeId = nodeId;
		this.appliers = List.copyOf(appliers);
		this.ahead = new long[this.appliers.size()];
		this.store = store;
		this.retention = new GroupRetention(group, nodeId, store, retention, leading);
		this.terms = new AppliedTerms(group);
		this.readFailures = new FailureWarnings(logger, "Decision log group=" + group + " node=" + nodeId + " read",
				FailureWarnings.REPEAT);
	}

	void setMonitor(LogMonitor monitor) {
		this.monitor = monitor;
	}

	synchronized void start() {
		if (!this.stopped) {
			return;
		}
		this.stopped = false;
		this.readWanted = true;
		long run = ++this.run;
		this.retention.start(System.nanoTime());
		Thread previous = this.thread;
		Thread thread = OwnThreads.daemon("leader-log-" + this.group, () -> {
			if (awaitEnd(previous)) {
				run(run);
			}
		});
		this.thread = thread;
		thread.start();
	}

	/**
	 * Stops the thread once the entry being applied is done, waiting up to 5 s for it and
	 * then interrupting it. No applier is called after this returns; one that was called
	 * before may still be running if it ignores the interrupt, and its entry then counts
	 * as applied.
	 */
	void stop() {
		Thread thread;
		synchronized (this) {
			this.stopped = true;
			notifyAll();
			thread = this.thread;
		}
		if (thread == null || thread == Thread.currentThread()) {
			return;
		}
		try {
			thread.join(STOP_WAIT_MILLIS);
			if (thread.isAlive()) {
				logger.warn("Decision log group=" + this.group + " node=" + this.nodeId + " still applies an entry "
						+ STOP_WAIT_MILLIS + " ms after the stop; interrupting its thread");
				thread.interrupt();
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	private static boolean awaitEnd(@Nullable Thread previous) {
		if (previous == null) {
			return true;
		}
		try {
			previous.join();
			return true;
		}
		catch (InterruptedException ex) {
			return false;
		}
	}

	/**
	 * Learns that the log holds an entry at this index, committed.
	 * @param index the index
	 */
	synchronized void notified(long index) {
		if (index > this.known) {
			this.known = index;
			notifyAll();
		}
	}

	/**
	 * Records a read of the log's end. Only an end at the index applied, with the same
	 * term, confirms that this node was caught up when the read was sent; an end beyond
	 * it confirms once that entry is applied. An end before the index applied comes from
	 * a read that started before the later entries committed, or from a log that lost
	 * them; an end at or before it with another term, from a log that lost entries.
	 * Either confirms nothing and makes the thread read the log to check it. When the
	 * read is evidence of a loss (another term, or an end before an index that a read of
	 * this thread found before this one was sent), it also voids the confirmations of
	 * reads sent before it: bounded reads are not served locally until the check.
	 * @param end the last entry when the read started
	 * @param sentAt when the read was sent, on {@link System#nanoTime()}
	 */
	synchronized void confirmed(Bookmark end, long sentAt) {
		notified(end.index());
		if (end.index() > this.applied) {
			this.staleness.pending(end, sentAt);
		}
		else if (end.index() == this.applied && this.terms.termAt(end.index()) == end.term()) {
			this.staleness.caughtUp(sentAt);
		}
		else {
			long term = this.terms.termAt(end.index());
			if ((term != AppliedTerms.UNKNOWN && term != end.term()) || this.sightings.showLoss(end, sentAt)) {
				this.staleness.clear(System.nanoTime());
			}
			this.readWanted = true;
			notifyAll();
		}
	}

	synchronized Bookmark applied() {
		return new Bookmark(this.group, this.appliedTerm, this.applied);
	}

	/**
	 * Checks that an applied bookmark is in this node's history.
	 * @param bookmark the bookmark, at most the index applied
	 * @throws IllegalStateException if it is not in this node's history, or this node
	 * cannot tell
	 * @see AppliedTerms#requireInHistory
	 */
	synchronized void requireInHistory(Bookmark bookmark) {
		requireRunning();
		this.terms.requireInHistory(bookmark);
	}

	/**
	 * Returns how many entries this node knows the log holds beyond those it applied.
	 * @return the count, 0 or more
	 */
	synchronized long lag() {
		return Math.max(0, this.known - this.applied);
	}

	/**
	 * Waits until the entry at the bookmark's index is applied.
	 * @param bookmark the bookmark
	 * @param deadline when to give up, on {@link System#nanoTime()}
	 * @return whether it was applied in time
	 * @throws LostEntryException if the log went on past the bookmark's term without it
	 * @throws IllegalStateException if the group's log halted or diverged on this node
	 * @throws InterruptedException if the caller was interrupted
	 */
	synchronized boolean awaitApplied(Bookmark bookmark, long deadline) throws InterruptedException {
		while (this.applied < bookmark.index()) {
			requireRunning();
			if (this.appliedTerm > bookmark.term()) {
				// Terms rise along the log: an entry after this one has a term at least
				// as high, so the bookmark's entry is not in the log.
				throw new LostEntryException("The entry of bookmark " + bookmark + " was lost in a failover of the "
						+ "database (a standby that had not received it was promoted): the log of group " + this.group
						+ " went on under term " + this.appliedTerm + " at index " + this.applied
						+ " without it. Take the decision again on the group's leader", bookmark);
			}
			long left = deadline - System.nanoTime();
			if (left <= 0) {
				return false;
			}
			TimeUnit.NANOSECONDS.timedWait(this, left);
		}
		requireRunning();
		return true;
	}

	/**
	 * Waits until this node has applied an entry that a read of the log's end found: its
	 * index, with the same term.
	 * @param end the log's last entry, read after this node applied the index it had
	 * applied when the read was sent
	 * @param deadline when to give up, on {@link System#nanoTime()}
	 * @return whether it was applied in time
	 * @throws IllegalStateException if the group's log halted or diverged on this node
	 * @throws InterruptedException if the caller was interrupted
	 */
	synchronized boolean awaitEnd(Bookmark end, long deadline) throws InterruptedException {
		while (true) {
			requireRunning();
			if (this.applied >= end.index()) {
				long term = this.terms.termAt(end.index());
				if (term == end.term()) {
					return true;
				}
				if (term != AppliedTerms.UNKNOWN) {
					throw suspect("it applied an entry of term " + term + " at index " + end.index()
							+ ", where the log holds one of term " + end.term());
				}
			}
			long left = deadline - System.nanoTime();
			if (left <= 0) {
				return false;
			}
			TimeUnit.NANOSECONDS.timedWait(this, left);
		}
	}

	/**
	 * Makes the thread check the log against what this node applied, because a read found
	 * them apart; until a read sent after this one confirms again, no bounded read is
	 * served locally.
	 * @param why what the read found
	 * @return the exception for the read to throw
	 */
	synchronized LogDivergedException suspect(String why) {
		this.staleness.clear(System.nanoTime());
		this.readWanted = true;
		notifyAll();
		if (this.divergence != null) {
			return this.divergence;
		}
		Bookmark applied = applied();
		return new LogDivergedException("The decision log of group " + this.group + " may have diverged on node "
				+ this.nodeId + ": " + why + ". It is checking the log, and serves no read as consistent until it has",
				applied, null);
	}

	/**
	 * Returns how far behind the log this node may be, pessimistically.
	 * @param now the moment, on {@link System#nanoTime()}
	 * @return the bound in nanoseconds, or -1 if no read of the log has confirmed it yet
	 */
	synchronized long stalenessNanos(long now) {
		return (this.failure != null || this.divergence != null) ? -1 : this.staleness.nanos(now);
	}

	/**
	 * Returns how far behind the log this node may be, for a read that is served on it.
	 * @param now the moment, on {@link System#nanoTime()}
	 * @return the bound in nanoseconds, or -1 if no read of the log has confirmed it yet
	 * @throws IllegalStateException if the group's log halted or diverged on this node
	 */
	synchronized long servedStalenessNanos(long now) {
		requireRunning();
		return this.staleness.nanos(now);
	}

	/**
	 * Returns why this node serves no read of the group.
	 * @return the divergence, while it lasts, or the failure that halted the group
	 */
	synchronized @Nullable Throwable failure() {
		return (this.failure != null) ? this.failure : this.divergence;
	}

	private void requireRunning() {
		if (this.failure != null) {
			if (this.failure instanceof LogDivergedException diverged) {
				throw diverged;
			}
			throw new IllegalStateException("The decision log of group " + this.group + " halted on this node at index "
					+ this.applied + ": " + this.failure, this.failure);
		}
		if (this.divergence != null) {
			throw this.divergence;
		}
		if (this.stopped) {
			throw new IllegalStateException("The decision log of group " + this.group + " is stopped on this node");
		}
	}

	private synchronized boolean current(long run) {
		return run == this.run && !this.stopped && this.failure == null;
	}

	private void run(long run) {
		while (true) {
			long from;
			long fromTerm;
			long knownAtRead;
			synchronized (this) {
				while (current(run) && !this.readWanted && this.known <= this.applied) {
					try {
						if (!this.retention.truncates()) {
							wait();
						}
						else {
							long due = this.retention.dueIn(System.nanoTime());
							if (due <= 0) {
								break;
							}
							TimeUnit.NANOSECONDS.timedWait(this, due);
						}
					}
					catch (InterruptedException ex) {
						return;
					}
				}
				if (!current(run)) {
					return;
				}
				from = this.applied;
				fromTerm = this.appliedTerm;
			}
			if (this.retention.truncates() && this.retention.dueIn(System.nanoTime()) <= 0) {
				this.retention.truncate(new Bookmark(this.group, fromTerm, from));
			}
			synchronized (this) {
				if (!this.readWanted && this.known <= this.applied) {
					continue;
				}
				this.readWanted = false;
				from = this.applied;
				fromTerm = this.appliedTerm;
				knownAtRead = this.known;
			}
			long sentAt = System.nanoTime();
			List<LogEntry> read;
			try {
				// From the last entry applied, to check that the log still holds it.
				read = this.store.read(this.group, Math.max(0, from - 1), BATCH + 1);
			}
			catch (RuntimeException ex) {
				this.readFailures.failed(System.nanoTime(), ex,
						"the node applies nothing after index " + from + " until a read succeeds; retrying every 1 s");
				if (!pause(run)) {
					return;
				}
				continue;
			}
			long receivedAt = System.nanoTime();
			this.readFailures.succeeded(receivedAt);
			boolean full = read.size() > BATCH;
			List<LogEntry> entries = read;
			if (from > 0 && !read.isEmpty() && read.get(0).index() == from) {
				if (read.get(0).term() != fromTerm) {
					if (!diverged(run, from, "the log holds an entry of term " + read.get(0).term() + " there")) {
						return;
					}
					continue;
				}
				entries = read.subList(1, read.size());
			}
			else if (from > 0 && read.isEmpty()) {
				if (!diverged(run, from, "the log ends before it")) {
					return;
				}
				continue;
			}
			else if (from > 0 || (!read.isEmpty() && read.get(0).index() != 1)) {
				// The read found neither the entry applied last nor the one after it
				// first.
				Next next = pastMissing(run, from, fromTerm, read.get(0).index());
				if (next == Next.STOP) {
					return;
				}
				if (next == Next.READ) {
					continue;
				}
			}
			synchronized (this) {
				// Before the entries are applied, as a read of the end may come back
				// meanwhile.
				this.sightings.seen(entries.isEmpty() ? from : entries.get(entries.size() - 1).index(), receivedAt);
			}
			if (!applyAll(run, from, entries)) {
				return;
			}
			synchronized (this) {
				if (!full) {
					long end = from + entries.size();
					confirmed(new Bookmark(this.group, (end > from) ? entries.get(entries.size() - 1).term() : fromTerm,
							end), sentAt);
					if (this.known == knownAtRead && this.known > end) {
						// Only a caller's bookmark claimed more, and the log ends
						// before it: forget the claim rather than read again at once.
						// What commits later is notified.
						this.known = end;
					}
				}
				else {
					this.readWanted = true;
				}
			}
		}
	}

	private boolean applyAll(long run, long from, List<LogEntry> entries) {
		long expected = from + 1;
		for (LogEntry entry : entries) {
			if (entry.index() != expected) {
				halt(run, new IllegalStateException("Entry " + expected + " is missing from the log, which goes on at "
						+ entry.index() + "; this node cannot apply the entries after " + from));
				return false;
			}
			if (!current(run)) {
				return false;
			}
			long started = System.nanoTime();
			for (int i = 0; i < this.appliers.size(); i++) {
				if (entry.index() <= aheadOf(i)) {
					continue;
				}
				LogApplier applier = this.appliers.get(i);
				try {
					applier.apply(entry);
				}
				catch (Throwable ex) {
					halt(run, new IllegalStateException("Applier " + applier.getClass().getName() + " failed on entry "
							+ entry.index() + " (term " + entry.term() + ", type " + entry.type() + ")", ex));
					return false;
				}
			}
			measured(Duration.ofNanos(System.nanoTime() - started));
			advance(entry);
			expected++;
		}
		return true;
	}

	private synchronized long aheadOf(int applier) {
		return this.ahead[applier];
	}

	/**
	 * Goes on past an entry that the log no longer holds at the start of a read: resets
	 * the appliers past entries that retention removed before this node applied them, or
	 * applies what the read found if retention removed only the entry applied last, with
	 * the same term, or finds the group diverged if it had another term. Halts if no
	 * truncation explains the missing entries, or an applier cannot reset.
	 * @param run the start the thread belongs to
	 * @param from the index applied
	 * @param fromTerm the term applied at that index
	 * @param first the first index the read found
	 * @return what to do next
	 */
	private Next pastMissing(long run, long from, long fromTerm, long first) {
		Bookmark through;
		try {
			through = this.store.truncated(this.group);
		}
		catch (RuntimeException ex) {
			logger.warn("Decision log group=" + this.group + " node=" + this.nodeId
					+ " could not read where the log was truncated; retrying in 1 s: " + ex);
			return pause(run) ? Next.READ : Next.STOP;
		}
		if (through.index() < first - 1) {
			halt(run, new IllegalStateException("Entry " + (from + 1) + " is missing from the log, which goes on at "
					+ first + "; this node cannot apply the entries after " + from));
			return Next.STOP;
		}
		if (through.index() == from) {
			if (through.term() != fromTerm) {
				return diverged(run, from,
						"retention removed it, and the entry it removed there has term " + through.term()) ? Next.READ
								: Next.STOP;
			}
			return Next.APPLY;
		}
		return resetPastTruncation(run, from, through) ? Next.READ : Next.STOP;
	}

	/**
	 * Resets the appliers past entries that retention removed before this node applied
	 * them, or halts if an applier cannot reset.
	 * @param run the start the thread belongs to
	 * @param from the index applied
	 * @param through where the log was truncated, after {@code from}
	 * @return whether to go on reading
	 */
	private boolean resetPastTruncation(long run, long from, Bookmark through) {
		for (LogApplier applier : this.appliers) {
			if (!current(run)) {
				return false;
			}
			try {
				applier.reset(through);
			}
			catch (UnsupportedOperationException ex) {
				halt(run, new IllegalStateException("The log of group " + this.group + " was truncated through entry "
						+ through + " (leader.log.retention) before this node applied entry " + (from + 1)
						+ ", and applier " + applier.getClass().getName()
						+ " does not implement LogApplier.reset: this node cannot catch up without skipping entries."
						+ " Implement reset, or keep more entries", ex));
				return false;
			}
			catch (Throwable ex) {
				halt(run, new IllegalStateException("Applier " + applier.getClass().getName()
						+ " failed to reset to entry " + through + ", which retention truncated the log through", ex));
				return false;
			}
		}
		logger.info("Decision log group=" + this.group + " node=" + this.nodeId + " reset its appliers from index "
				+ from + " to " + through + ", where the log was truncated");
		resetTo(through);
		return true;
	}

	private enum Next {

		/** Apply the entries the read found. */
		APPLY,

		/** Read again. */
		READ,

		/** End the thread. */
		STOP

	}

	private synchronized void resetTo(Bookmark through) {
		this.terms.resetTo(through);
		this.applied = through.index();
		this.appliedTerm = through.term();
		Arrays.fill(this.ahead, 0);
		this.divergence = null;
		this.readWanted = true;
		this.known = Math.max(this.known, this.applied);
		this.staleness.applied(this.applied, this.terms::termAt);
		notifyAll();
	}

	/**
	 * Handles a log that no longer holds the entry this node applied last: reads fail
	 * from now on, the last entry both histories share is found, and the appliers rewind
	 * to it. Halts if an applier cannot rewind.
	 * @param run the start the thread belongs to
	 * @param from the index applied
	 * @param why what the read found at that index, for the message
	 * @return whether to go on reading
	 */
	private boolean diverged(long run, long from, String why) {
		Bookmark applied;
		synchronized (this) {
			applied = applied();
			if (this.divergence == null) {
				this.divergence = new LogDivergedException(divergedMessage(applied, why, null), applied, null);
				this.staleness.clear(System.nanoTime());
				notifyAll();
				logger.error("Decision log group=" + this.group + " node=" + this.nodeId + " diverged: "
						+ this.divergence.getMessage());
				try {
					this.monitor.diverged(this.group);
				}
				catch (RuntimeException ex) {
					logger.debug("Log monitor failed: " + ex);
				}
			}
		}
		Bookmark common;
		try {
			common = lastCommon(from - 1);
		}
		catch (RuntimeException ex) {
			logger.warn("Decision log group=" + this.group + " node=" + this.nodeId
					+ " could not read the log to find where it diverged; retrying in 1 s: " + ex);
			return pause(run);
		}
		LogDivergedException diverged = new LogDivergedException(divergedMessage(applied, why, common), applied,
				common);
		synchronized (this) {
			this.divergence = diverged;
		}
		long[] positions = new long[this.appliers.size()];
		for (int i = 0; i < positions.length; i++) {
			if (!current(run)) {
				return false;
			}
			LogApplier applier = this.appliers.get(i);
			try {
				positions[i] = applier.rewind(common);
			}
			catch (UnsupportedOperationException ex) {
				halt(run, new LogDivergedException(diverged.getMessage() + ". Applier " + applier.getClass().getName()
						+ " does not implement LogApplier.rewind, so this node applies nothing more of the group "
						+ "until it restarts", applied, common));
				return false;
			}
			catch (Throwable ex) {
				halt(run, new LogDivergedException(diverged.getMessage() + ". Applier " + applier.getClass().getName()
						+ " failed to rewind: " + ex, applied, common));
				return false;
			}
			if (positions[i] < 0 || positions[i] > common.index()) {
				halt(run,
						new LogDivergedException(
								diverged.getMessage() + ". Applier " + applier.getClass().getName()
										+ " rewound to index " + positions[i] + ", not one from 0 to " + common.index(),
								applied, common));
				return false;
			}
		}
		rewound(positions);
		logger.warn("Decision log group=" + this.group + " node=" + this.nodeId + " rewound its appliers to index "
				+ this.applied().index() + " after the divergence; applying the log from there");
		return true;
	}

	private String divergedMessage(Bookmark applied, String why, @Nullable Bookmark common) {
		return "The decision log of group " + this.group + " diverged on node " + this.nodeId + ": the log no longer "
				+ "holds entry " + applied + ", the last this node applied (" + why + "); a failover of the database "
				+ "lost it" + ((common != null) ? ", and the entries this node applied after " + common.index() : "")
				+ ". Nothing is served as consistent until the group's appliers have rewound";
	}

	/**
	 * Finds the last entry this node applied that the log still holds, with the same
	 * term: a binary search, since a term appends in one history only, so that the two
	 * histories agree on every entry up to the last they share. An entry that retention
	 * removed counts as shared up to the last one removed, if this node applied that one
	 * with the same term, and as not shared otherwise.
	 * @param below the highest index to consider
	 * @return the entry's bookmark, or the start of the log
	 */
	private Bookmark lastCommon(long below) {
		long low = 0;
		long high = below;
		Bookmark through = this.store.truncated(this.group);
		synchronized (this) {
			if (through.index() > 0 && through.index() <= below
					&& this.terms.termAt(through.index()) == through.term()) {
				// Retention removed the entries up to it, which both histories share.
				low = through.index();
			}
		}
		while (low < high) {
			long middle = low + (high - low + 1) / 2;
			long term;
			synchronized (this) {
				term = this.terms.termAt(middle);
			}
			List<LogEntry> entry = this.store.read(this.group, middle - 1, 1);
			if (term != AppliedTerms.UNKNOWN && !entry.isEmpty() && entry.get(0).index() == middle
					&& entry.get(0).term() == term) {
				low = middle;
			}
			else {
				high = middle - 1;
			}
		}
		synchronized (this) {
			return new Bookmark(this.group, Math.max(0, this.terms.termAt(low)), low);
		}
	}

	private synchronized void rewound(long[] positions) {
		long lowest = Arrays.stream(positions).min().orElse(0);
		for (int i = 0; i < positions.length; i++) {
			this.ahead[i] = positions[i];
		}
		this.terms.rewoundTo(lowest);
		this.applied = lowest;
		this.sightings.rewoundTo(lowest);
		this.appliedTerm = Math.max(0, this.terms.termAt(lowest));
		this.divergence = null;
		this.readWanted = true;
		this.staleness.clear(System.nanoTime());
		notifyAll();
	}

	private void measured(Duration duration) {
		try {
			this.monitor.applied(this.group, duration);
		}
		catch (RuntimeException ex) {
			logger.debug("Log monitor failed: " + ex);
		}
	}

	private synchronized void advance(LogEntry entry) {
		this.applied = entry.index();
		if (entry.term() != this.appliedTerm) {
			this.terms.started(entry.index(), entry.term());
			this.appliedTerm = entry.term();
		}
		this.staleness.applied(this.applied, this.terms::termAt);
		notifyAll();
	}

	private synchronized void halt(long run, Throwable failure) {
		if (run != this.run || this.stopped) {
			return;
		}
		this.failure = failure;
		this.staleness.clear(System.nanoTime());
		logger.error("Decision log group=" + this.group + " node=" + this.nodeId + " halted after index " + this.applied
				+ "; nothing more is applied on this node until it restarts", failure);
		notifyAll();
	}

	private synchronized boolean pause(long run) {
		this.readWanted = true;
		try {
			wait(1000);
		}
		catch (InterruptedException ex) {
			return false;
		}
		return current(run);
	}

}
