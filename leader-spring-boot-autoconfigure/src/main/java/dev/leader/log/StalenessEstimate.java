package dev.leader.log;

import java.util.ArrayDeque;
import java.util.function.LongUnaryOperator;

/**
 * The staleness estimate of a {@link GroupTail}. It rests on confirmations: a read of the
 * log that started at a moment of the local monotonic clock and found its end at an
 * entry. Once this node has applied that entry, the same one (its index and its term),
 * this node is no more than the time since that moment behind. The estimate never counts
 * idle time as lag beyond the time since the last confirmation, and it is never low: the
 * moment is taken before the read is sent, and an end whose term differs from the one
 * this node applied at its index confirms nothing.
 * <p>
 * Not thread-safe: the tail calls it under its monitor.
 */
final class StalenessEstimate {

	// Confirmations beyond the index applied: {index, term, moment}, in rising order.
	private final ArrayDeque<long[]> pending = new ArrayDeque<>();

	private boolean confirmed;

	private long confirmedAt;

	// Reads sent before this moment confirm nothing: they were sent before this node
	// found its entries apart from the log's.
	private boolean doubted;

	private long doubtedAt;

	/**
	 * Records a read that found the log's end at an entry this node has applied.
	 * @param sentAt when the read was sent, on {@link System#nanoTime()}
	 */
	void caughtUp(long sentAt) {
		if (counts(sentAt)) {
			confirm(sentAt);
		}
	}

	/**
	 * Records a read that found the log's end beyond the index applied.
	 * @param end the log's last entry when the read started
	 * @param sentAt when the read was sent, on {@link System#nanoTime()}
	 */
	void pending(Bookmark end, long sentAt) {
		if (counts(sentAt)) {
			this.pending.addLast(new long[] { end.index(), end.term(), sentAt });
		}
	}

	/**
	 * Takes in the confirmations that the index applied now reaches, those whose entry
	 * this node applied with the same term.
	 * @param applied the index applied now
	 * @param termAt the term this node applied at an index up to {@code applied}
	 */
	void applied(long applied, LongUnaryOperator termAt) {
		while (!this.pending.isEmpty() && this.pending.peekFirst()[0] <= applied) {
			long[] confirmation = this.pending.pollFirst();
			if (termAt.applyAsLong(confirmation[0]) == confirmation[1]) {
				confirm(confirmation[2]);
			}
		}
	}

	/**
	 * Forgets every confirmation, and those of reads sent before now that are still on
	 * their way: this node's entries were found apart from the log's.
	 * @param now the moment, on {@link System#nanoTime()}
	 */
	void clear(long now) {
		this.pending.clear();
		this.confirmed = false;
		this.doubted = true;
		this.doubtedAt = now;
	}

	private void confirm(long sentAt) {
		if (!this.confirmed || sentAt - this.confirmedAt > 0) {
			this.confirmedAt = sentAt;
			this.confirmed = true;
		}
	}

	private boolean counts(long sentAt) {
		return !this.doubted || sentAt - this.doubtedAt >= 0;
	}

	/**
	 * Returns how far behind the log this node may be, pessimistically.
	 * @param now the moment, on {@link System#nanoTime()}
	 * @return the bound in nanoseconds, or -1 if no read of the log has confirmed it yet
	 */
	long nanos(long now) {
		return this.confirmed ? Math.max(0, now - this.confirmedAt) : -1;
	}

}
