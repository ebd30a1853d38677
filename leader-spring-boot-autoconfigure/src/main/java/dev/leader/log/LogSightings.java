package dev.leader.log;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * What the reads of a {@link GroupTail} found in the log, and when: the moment each new
 * highest index was first seen, once the read that found it returned. A read of the log's
 * end that was sent after such a moment and found the end before that index shows that
 * the log lost entries: the log only grows, except in a failover that loses it.
 * <p>
 * Bounded: a sighting older than a minute stands for every older one (any read sent since
 * came after them all, and the newest of them has the highest index), and at most
 * {@value #MAX} are kept; evidence missed for a read sent longer ago only leaves the
 * check of the log to the tail's next read.
 * <p>
 * Not thread-safe: the tail calls it under its monitor.
 */
final class LogSightings {

	private static final long OLD_NANOS = TimeUnit.MINUTES.toNanos(1);

	private static final int MAX = 1024;

	private final TreeMap<Long, Long> firstSeen = new TreeMap<>();

	/**
	 * Records that a read found the log holding an index.
	 * @param index the highest index the read found
	 * @param returnedAt when the read returned, on {@link System#nanoTime()}
	 */
	void seen(long index, long returnedAt) {
		Map.Entry<Long, Long> last = this.firstSeen.lastEntry();
		if (last != null && last.getKey() >= index) {
			return;
		}
		this.firstSeen.put(index, returnedAt);
		while (this.firstSeen.size() > 1) {
			long second = this.firstSeen.higherEntry(this.firstSeen.firstKey()).getValue();
			if (this.firstSeen.size() <= MAX && returnedAt - second <= OLD_NANOS) {
				break;
			}
			this.firstSeen.pollFirstEntry();
		}
	}

	/**
	 * Tells whether a read of the log's end shows the log lost entries: a read that
	 * returned before it was sent found an index beyond that end.
	 * @param end the end the read found
	 * @param sentAt when it was sent, on {@link System#nanoTime()}
	 * @return whether it shows a loss
	 */
	boolean showLoss(Bookmark end, long sentAt) {
		Map.Entry<Long, Long> beyond = this.firstSeen.ceilingEntry(end.index() + 1);
		return beyond != null && beyond.getValue() - sentAt < 0;
	}

	/**
	 * Forgets the sightings beyond an index that the appliers rewound to: they were of
	 * entries the log lost.
	 * @param index the index rewound to
	 */
	void rewoundTo(long index) {
		this.firstSeen.tailMap(index, false).clear();
	}

}
