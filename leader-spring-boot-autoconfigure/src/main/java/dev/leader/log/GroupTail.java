package dev.leader.log;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import dev.leader.FencingToken;
import dev.leader.node.OwnThreads;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * A node's tail of one group's log: the {@code leader-log-<group>} thread reads the
 * entries that follow the last one applied and applies each, in order, to the group's
 * appliers. It reads when it learns of an index beyond the one applied (a notification, a
 * read index) and once at start. Every field below is guarded by this object's monitor,
 * which the thread never holds while it reads or applies.
 * <p>
 * Each read of the log's end is a confirmation for the {@link StalenessEstimate}.
 * <p>
 * With {@linkplain LogRetention retention}, the same thread removes old entries while
 * this node leads the group: it wakes once per retention interval for it, and asks for
 * the group's token outside the monitor, since the store's listener may call this object
 * while the engine holds its lock. A read that finds entries missing at the start of what
 * it asked for reads where the log was truncated and resets the appliers there.
 */
final class GroupTail {

	private static final Log logger = LogFactory.getLog(DecisionLog.class);

	private static final int BATCH = 500;

	private final String group;

	private final String nodeId;

	private final List<LogApplier> appliers;

	private final LogStore store;

	private final GroupRetention retention;

	private volatile LogMonitor monitor = LogMonitor.NONE;

	private long applied;

	private long appliedTerm;

	private final AppliedTerms terms;

	private long known;

	private boolean readWanted = true;

	private final StalenessEstimate staleness = new StalenessEstimate();

	private @Nullable Throwable failure;

	private boolean stopped;

	private @Nullable Thread thread;

	GroupTail(String group, String nodeId, List<LogApplier> appliers, LogStore store, LogRetention retention,
			Function<String, Optional<FencingToken>> leading) {
		this.group = group;
		this.nodeId = nodeId;
		this.appliers = List.copyOf(appliers);
		this.store = store;
		this.retention = new GroupRetention(group, nodeId, store, retention, leading);
		this.terms = new AppliedTerms(group);
	}

	void setMonitor(LogMonitor monitor) {
		this.monitor = monitor;
	}

	synchronized void start() {
		this.stopped = false;
		this.readWanted = true;
		this.retention.start(System.nanoTime());
		Thread thread = OwnThreads.daemon("leader-log-" + this.group, this::run);
		this.thread = thread;
		thread.start();
	}

	/**
	 * Stops the thread once the entry being applied is done, waiting up to 5 s for it.
	 */
	void stop() {
		Thread thread;
		synchronized (this) {
			this.stopped = true;
			notifyAll();
			thread = this.thread;
		}
		if (thread != null && thread != Thread.currentThread()) {
			try {
				thread.join(TimeUnit.SECONDS.toMillis(5));
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
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
	 * Records a read of the log's end.
	 * @param index the last index when the read started
	 * @param sentAt when the read was sent, on {@link System#nanoTime()}
	 */
	synchronized void confirmed(long index, long sentAt) {
		notified(index);
		this.staleness.confirmed(index, sentAt, this.applied);
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
	 * Waits until the entry at the index is applied.
	 * @param index the index
	 * @param deadline when to give up, on {@link System#nanoTime()}
	 * @return whether it was applied in time
	 * @throws IllegalStateException if the group's log halted on this node
	 * @throws InterruptedException if the caller was interrupted
	 */
	synchronized boolean awaitApplied(long index, long deadline) throws InterruptedException {
		while (this.applied < index) {
			requireRunning();
			long left = deadline - System.nanoTime();
			if (left <= 0) {
				return false;
			}
			TimeUnit.NANOSECONDS.timedWait(this, left);
		}
		return true;
	}

	/**
	 * Returns how far behind the log this node may be, pessimistically.
	 * @param now the moment, on {@link System#nanoTime()}
	 * @return the bound in nanoseconds, or -1 if no read of the log has confirmed it yet
	 */
	synchronized long stalenessNanos(long now) {
		return this.staleness.nanos(now);
	}

	synchronized @Nullable Throwable failure() {
		return this.failure;
	}

	private void requireRunning() {
		if (this.failure != null) {
			throw new IllegalStateException("The decision log of group " + this.group + " halted on this node at index "
					+ this.applied + ": " + this.failure, this.failure);
		}
		if (this.stopped) {
			throw new IllegalStateException("The decision log of group " + this.group + " is stopped on this node");
		}
	}

	private void run() {
		while (true) {
			long from;
			long knownAtRead;
			synchronized (this) {
				while (!this.stopped && this.failure == null && !this.readWanted && this.known <= this.applied) {
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
				if (this.stopped || this.failure != null) {
					return;
				}
				from = this.applied;
				knownAtRead = this.known;
			}
			if (this.retention.truncates() && this.retention.dueIn(System.nanoTime()) <= 0) {
				this.retention.truncate(from);
			}
			synchronized (this) {
				if (!this.readWanted && this.known <= this.applied) {
					continue;
				}
				this.readWanted = false;
				from = this.applied;
				knownAtRead = this.known;
			}
			long sentAt = System.nanoTime();
			List<LogEntry> entries;
			try {
				entries = this.store.read(this.group, from, BATCH);
			}
			catch (RuntimeException ex) {
				logger.warn("Decision log group=" + this.group + " node=" + this.nodeId
						+ " could not be read after index " + from + "; retrying in 1 s: " + ex);
				if (!pause()) {
					return;
				}
				continue;
			}
			if (!entries.isEmpty() && entries.get(0).index() != from + 1) {
				if (!resetPastTruncation(from, entries.get(0).index())) {
					return;
				}
				continue;
			}
			if (!applyAll(from, entries)) {
				return;
			}
			synchronized (this) {
				if (entries.size() < BATCH) {
					long end = from + entries.size();
					confirmed(end, sentAt);
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

	private boolean applyAll(long from, List<LogEntry> entries) {
		long expected = from + 1;
		for (LogEntry entry : entries) {
			if (entry.index() != expected) {
				halt(new IllegalStateException("Entry " + expected + " is missing from the log, which goes on at "
						+ entry.index() + "; this node cannot apply the entries after " + from));
				return false;
			}
			long started = System.nanoTime();
			for (LogApplier applier : this.appliers) {
				try {
					applier.apply(entry);
				}
				catch (Throwable ex) {
					halt(new IllegalStateException("Applier " + applier.getClass().getName() + " failed on entry "
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

	/**
	 * Resets the appliers past entries that retention removed before this node applied
	 * them, or halts: if no truncation explains the missing entries, or an applier cannot
	 * reset.
	 * @param from the index applied
	 * @param first the first index the read found
	 * @return whether to go on reading
	 */
	private boolean resetPastTruncation(long from, long first) {
		Bookmark through;
		try {
			through = this.store.truncated(this.group);
		}
		catch (RuntimeException ex) {
			logger.warn("Decision log group=" + this.group + " node=" + this.nodeId
					+ " could not read where the log was truncated; retrying in 1 s: " + ex);
			return pause();
		}
		if (through.index() < first - 1) {
			halt(new IllegalStateException("Entry " + (from + 1) + " is missing from the log, which goes on at " + first
					+ "; this node cannot apply the entries after " + from));
			return false;
		}
		for (LogApplier applier : this.appliers) {
			try {
				applier.reset(through);
			}
			catch (UnsupportedOperationException ex) {
				halt(new IllegalStateException("The log of group " + this.group + " was truncated through entry "
						+ through + " (leader.log.retention) before this node applied entry " + (from + 1)
						+ ", and applier " + applier.getClass().getName()
						+ " does not implement LogApplier.reset: this node cannot catch up without skipping entries."
						+ " Implement reset, or keep more entries", ex));
				return false;
			}
			catch (Throwable ex) {
				halt(new IllegalStateException("Applier " + applier.getClass().getName() + " failed to reset to entry "
						+ through + ", which retention truncated the log through", ex));
				return false;
			}
		}
		logger.info("Decision log group=" + this.group + " node=" + this.nodeId + " reset its appliers from index "
				+ from + " to " + through + ", where the log was truncated");
		resetTo(from, through);
		return true;
	}

	private synchronized void resetTo(long from, Bookmark through) {
		this.terms.resetPast(from, through);
		this.applied = through.index();
		this.appliedTerm = through.term();
		this.readWanted = true;
		this.known = Math.max(this.known, this.applied);
		this.staleness.applied(this.applied);
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
		this.staleness.applied(this.applied);
		notifyAll();
	}

	private synchronized void halt(Throwable failure) {
		this.failure = failure;
		logger.error("Decision log group=" + this.group + " node=" + this.nodeId + " halted after index " + this.applied
				+ "; nothing more is applied on this node until it restarts", failure);
		notifyAll();
	}

	private synchronized boolean pause() {
		this.readWanted = true;
		try {
			wait(1000);
		}
		catch (InterruptedException ex) {
			return false;
		}
		return !this.stopped;
	}

}
