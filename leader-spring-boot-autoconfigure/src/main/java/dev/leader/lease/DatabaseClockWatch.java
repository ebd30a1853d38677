package dev.leader.lease;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * Compares how far the database clock advanced between two heartbeats of this node with
 * how far its monotonic clock did. The database read its clock for each heartbeat between
 * its send and its reply, so it cannot honestly have advanced by more than the time from
 * the earlier send to the later reply; more than that by over the safety margin is a
 * forward step of the database clock, which ends leases early while their holders still
 * count on them. Called by one round trip at a time; {@link #steps()} on any thread.
 */
final class DatabaseClockWatch {

	private static final Log logger = LogFactory.getLog(LeaderEngine.class);

	private final String nodeId;

	private final Duration safetyMargin;

	private final AtomicLong steps = new AtomicLong();

	private @Nullable Instant lastDatabaseTime;

	private long lastDatabaseTimeSent;

	DatabaseClockWatch(String nodeId, Duration safetyMargin) {
		this.nodeId = nodeId;
		this.safetyMargin = safetyMargin;
	}

	/**
	 * Checks a heartbeat against the one before.
	 * @param databaseTime the database time the heartbeat wrote
	 * @param sent the local instant the heartbeat was sent
	 * @param received the local instant its reply arrived
	 */
	void heartbeat(Instant databaseTime, long sent, long received) {
		Instant previous = this.lastDatabaseTime;
		long previousSent = this.lastDatabaseTimeSent;
		this.lastDatabaseTime = databaseTime;
		this.lastDatabaseTimeSent = sent;
		if (previous == null) {
			return;
		}
		long advanced = Duration.between(previous, databaseTime).toNanos();
		long elapsed = received - previousSent;
		if (advanced - elapsed > this.safetyMargin.toNanos()) {
			this.steps.incrementAndGet();
			logger.warn(String.format("Leader node %s saw the database clock step forward: it advanced %d ms between "
					+ "two heartbeats, while at most %d ms passed on this node. Leases are timed by the database clock "
					+ "and may have ended up to %d ms early, while their holders still counted on them; keep the "
					+ "database server's clock slewed, never stepped (for example chrony with makestep off)",
					this.nodeId, TimeUnit.NANOSECONDS.toMillis(advanced), TimeUnit.NANOSECONDS.toMillis(elapsed),
					TimeUnit.NANOSECONDS.toMillis(advanced - elapsed)));
		}
	}

	/**
	 * Returns how many forward steps were seen.
	 * @return the number of steps since this watch was created
	 */
	long steps() {
		return this.steps.get();
	}

}
