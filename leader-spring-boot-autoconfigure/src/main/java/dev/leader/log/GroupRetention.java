package dev.leader.log;

import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import dev.leader.FencingToken;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/**
 * Retention of one group's log on a node: while the node leads the group, removes the
 * entries that {@link LogRetention} no longer keeps, once per retention interval, or
 * sooner after a full batch. Only the thread of the group's {@link GroupTail} calls it,
 * outside the tail's monitor, since asking for the group's token may wait for the
 * engine's lock.
 */
final class GroupRetention {

	private static final Log logger = LogFactory.getLog(DecisionLog.class);

	private static final int RETENTION_BATCH = 1000;

	private static final long FULL_BATCH_PAUSE = TimeUnit.MILLISECONDS.toNanos(100);

	private final String group;

	private final String nodeId;

	private final LogStore store;

	private final LogRetention retention;

	private final Function<String, Optional<FencingToken>> leading;

	private long nextRetention;

	private long appliedAtRetention = -1;

	/**
	 * Creates the retention of a group.
	 * @param group the group
	 * @param nodeId this node
	 * @param store the log store
	 * @param retention what to keep
	 * @param leading the token of this node's lease of a group, if it leads it
	 */
	GroupRetention(String group, String nodeId, LogStore store, LogRetention retention,
			Function<String, Optional<FencingToken>> leading) {
		this.group = group;
		this.nodeId = nodeId;
		this.store = store;
		this.retention = retention;
		this.leading = leading;
	}

	/**
	 * Returns whether retention removes anything.
	 * @return whether a limit is set
	 */
	boolean truncates() {
		return this.retention.truncates();
	}

	/**
	 * Makes the first truncation due at once.
	 * @param now the moment, on {@link System#nanoTime()}
	 */
	void start(long now) {
		this.nextRetention = now;
	}

	/**
	 * Returns how long until the next truncation is due.
	 * @param now the moment, on {@link System#nanoTime()}
	 * @return the nanoseconds, 0 or less when it is due
	 */
	long dueIn(long now) {
		return this.nextRetention - now;
	}

	/**
	 * Removes what retention no longer keeps, if this node leads the group; once per
	 * interval, or sooner after a full batch. A log that only a count limits is not
	 * touched again until more entries were applied.
	 * @param applied the last entry applied
	 */
	void truncate(Bookmark applied) {
		long now = System.nanoTime();
		this.nextRetention = now + this.retention.interval().toNanos();
		if (this.retention.maxAge() == null && applied.index() == this.appliedAtRetention) {
			return;
		}
		Optional<FencingToken> token = this.leading.apply(this.group);
		if (token.isEmpty()) {
			return;
		}
		try {
			LogStore.Truncated truncated = this.store.truncate(token.get(), this.nodeId, this.retention.keepEntries(),
					this.retention.maxAge(), applied, RETENTION_BATCH);
			if (!truncated.allowed()) {
				logger.debug("Decision log group=" + this.group + " node=" + this.nodeId + " term=" + token.get().term()
						+ " may not truncate: the term no longer leads");
				return;
			}
			if (truncated.removed() >= RETENTION_BATCH) {
				this.nextRetention = now + Math.min(FULL_BATCH_PAUSE, this.retention.interval().toNanos());
			}
			else {
				this.appliedAtRetention = applied.index();
			}
			if (truncated.through() != null) {
				logger.debug("Decision log group=" + this.group + " node=" + this.nodeId + " term=" + token.get().term()
						+ " truncated " + truncated.removed() + " entries through " + truncated.through());
			}
		}
		catch (RuntimeException ex) {
			logger.warn("Decision log group=" + this.group + " node=" + this.nodeId
					+ " could not truncate the log; retrying in " + this.retention.interval() + ": " + ex);
		}
	}

}
