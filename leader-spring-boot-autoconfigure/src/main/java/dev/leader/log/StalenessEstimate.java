package dev.leader.log;

import java.util.ArrayDeque;

/**
 * The staleness estimate of a {@link GroupTail}. It rests on confirmations: a read of the
 * log that started at a moment of the local monotonic clock and found its end at an
 * index. Once that index is applied, this node is no more than the time since that moment
 * behind. The estimate never counts idle time as lag beyond the time since the last
 * confirmation, and it is never low: the moment is taken before the read is sent.
 * <p>
 * Not thread-safe: the tail calls it under its monitor.
 */
final class StalenessEstimate {

	private static final long NONE = Long.MIN_VALUE;

	// Confirmations beyond the index applied: {index, moment}, in rising order of both.
	private final ArrayDeque<long[]> pending = new ArrayDeque<>();

	private long confirmedAt = NONE;

	/**
	 * Records a read of the log's end.
	 * @param index the last index when the read started
	 * @param sentAt when the read was sent, on {@link System#nanoTime()}
	 * @param applied the index applied now
	 */
	void confirmed(long index, long sentAt, long applied) {
		if (index <= applied) {
			this.confirmedAt = Math.max(this.confirmedAt, sentAt);
		}
		else {
			this.pending.addLast(new long[] { index, sentAt });
		}
	}

	/**
	 * Takes in the confirmations that the index applied now reaches.
	 * @param applied the index applied now
	 */
	void applied(long applied) {
		while (!this.pending.isEmpty() && this.pending.peekFirst()[0] <= applied) {
			this.confirmedAt = Math.max(this.confirmedAt, this.pending.pollFirst()[1]);
		}
	}

	/**
	 * Returns how far behind the log this node may be, pessimistically.
	 * @param now the moment, on {@link System#nanoTime()}
	 * @return the bound in nanoseconds, or -1 if no read of the log has confirmed it yet
	 */
	long nanos(long now) {
		return (this.confirmedAt == NONE) ? -1 : Math.max(0, now - this.confirmedAt);
	}

}
