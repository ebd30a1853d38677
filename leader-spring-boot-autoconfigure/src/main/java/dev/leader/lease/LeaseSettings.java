package dev.leader.lease;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The timing of the election engine. The range of each value and the relations between
 * them are checked on creation, with messages that name the {@code leader.*} properties
 * to change.
 *
 * @param duration how long a lease lasts after each acquire or renewal
 * @param renewInterval how often a node heartbeats and renews its leases, in one round
 * trip
 * @param retryInterval the wait before retrying after a failed round trip
 * @param safetyMargin how much earlier than the lease a node stops believing it leads, to
 * absorb clock-rate drift
 * @param nodeExpiry how long after its last heartbeat a node counts as dead
 * @param yieldCooldown how long a node that yielded stays out of the election
 */
public record LeaseSettings(Duration duration, Duration renewInterval, Duration retryInterval, Duration safetyMargin,
		Duration nodeExpiry, Duration yieldCooldown) {

	/**
	 * Longest value of every duration: 24 days. PostgreSQL takes the timeouts derived
	 * from them, such as the guards' {@code idle_in_transaction_session_timeout}, as an
	 * int of milliseconds, which ends at 24.8 days.
	 */
	public static final Duration MAX_DURATION = Duration.ofDays(24);

	/**
	 * Creates settings, checking the range of each value and the relations between them.
	 * @param duration the lease duration
	 * @param renewInterval the renew interval
	 * @param retryInterval the retry interval
	 * @param safetyMargin the safety margin
	 * @param nodeExpiry the node expiry
	 * @param yieldCooldown the yield cooldown
	 * @throws IllegalArgumentException naming the property to change
	 */
	public LeaseSettings {
		requireInRange("leader.lease.duration", duration, false);
		requireInRange("leader.lease.renew-interval", renewInterval, false);
		requireInRange("leader.lease.retry-interval", retryInterval, false);
		requireInRange("leader.lease.safety-margin", safetyMargin, true);
		requireInRange("leader.node.expiry", nodeExpiry, false);
		requireInRange("leader.lease.yield-cooldown", yieldCooldown, true);
		if (renewInterval.multipliedBy(2).compareTo(duration) >= 0) {
			throw new IllegalArgumentException("leader.lease.renew-interval (" + renewInterval
					+ ") must be less than half of leader.lease.duration (" + duration
					+ ") so that a missed renewal can be retried before the lease expires; "
					+ "lower the renew interval or raise the duration");
		}
		// A renewal sent at t is followed by one at t + renew interval; if that fails,
		// the retry goes out a retry interval later at the earliest, and must still find
		// the leader inside its safe window, which ends at t + duration - safety margin.
		Duration failedRenewal = renewInterval.plus(retryInterval).plus(safetyMargin);
		if (failedRenewal.compareTo(duration) >= 0) {
			throw new IllegalArgumentException(describeFailedRenewal(renewInterval, retryInterval, safetyMargin)
					+ " must be less than leader.lease.duration (" + duration
					+ "), so that a failed renewal is retried before the leader's safe window closes; "
					+ "lower one of them or raise the duration");
		}
		if (nodeExpiry.compareTo(renewInterval.multipliedBy(2)) < 0) {
			throw new IllegalArgumentException("leader.node.expiry (" + nodeExpiry
					+ ") must be at least twice leader.lease.renew-interval (" + renewInterval
					+ "), the heartbeat interval, so that one late heartbeat does not declare a node dead; "
					+ "raise the expiry or lower the renew interval");
		}
		// A node stops its daemons once it has not heartbeated for the node expiry minus
		// the safety margin; the same sum as above keeps them running through one failed
		// heartbeat and its retry.
		if (failedRenewal.compareTo(nodeExpiry) >= 0) {
			throw new IllegalArgumentException(describeFailedRenewal(renewInterval, retryInterval, safetyMargin)
					+ " must be less than leader.node.expiry (" + nodeExpiry
					+ "), since a node stops its daemons once it has not heartbeated for the node expiry minus the "
					+ "safety margin, and one failed heartbeat must not stop them; raise the expiry or lower the "
					+ "others");
		}
	}

	/**
	 * Returns the defaults: a 10 s lease renewed every 3 s, retries after 2 s, a 200 ms
	 * safety margin, a 10 s node expiry and a 10 s yield cooldown.
	 * @return the default settings
	 */
	public static LeaseSettings defaults() {
		return new LeaseSettings(Duration.ofSeconds(10), Duration.ofSeconds(3), Duration.ofSeconds(2),
				Duration.ofMillis(200), Duration.ofSeconds(10), Duration.ofSeconds(10));
	}

	/**
	 * Checks that a heartbeat which waits out the whole call timeout of a coordinator
	 * that hangs (a paused member of a cluster: the call finds no error, only silence),
	 * and the retry that follows it a retry interval later, still renew within the
	 * leader's safe window and before the node's daemons stop: the renew interval plus
	 * the call timeout plus the retry interval plus the safety margin must be less than
	 * both the lease duration and the node expiry. It is {@link LeaseSettings}' own rule
	 * for a failed renewal, with the time that renewal waited before it failed.
	 * @param property the property of the call timeout, such as
	 * {@code leader.etcd.timeout}
	 * @param callTimeout the longest time a call to the coordinator may take
	 * @throws IllegalArgumentException naming the properties to change, and to what
	 */
	public void requireRoomForAHungCall(String property, Duration callTimeout) {
		Duration hungRenewal = this.renewInterval.plus(callTimeout).plus(this.retryInterval).plus(this.safetyMargin);
		boolean expiryFirst = this.nodeExpiry.compareTo(this.duration) < 0;
		Duration limit = expiryFirst ? this.nodeExpiry : this.duration;
		if (hungRenewal.compareTo(limit) < 0) {
			return;
		}
		Duration room = limit.minus(this.renewInterval).minus(this.retryInterval).minus(this.safetyMargin);
		String lowerTimeout = (!room.isNegative() && !room.isZero()) ? "lower " + property + " below " + room + ", or "
				: "";
		List<String> tooShort = new ArrayList<>();
		if (hungRenewal.compareTo(this.duration) >= 0) {
			tooShort.add("leader.lease.duration");
		}
		if (hungRenewal.compareTo(this.nodeExpiry) >= 0) {
			tooShort.add("leader.node.expiry");
		}
		throw new IllegalArgumentException(property + " (" + callTimeout + ") plus leader.lease.renew-interval ("
				+ this.renewInterval + ") plus leader.lease.retry-interval (" + this.retryInterval
				+ ") plus leader.lease.safety-margin (" + this.safetyMargin + ") must be less than "
				+ (expiryFirst ? "leader.node.expiry" : "leader.lease.duration") + " (" + limit
				+ "): a heartbeat sent to a member that hangs waits " + property
				+ " before it fails, and its retry must still renew within the leader's safe window; " + lowerTimeout
				+ "raise " + String.join(" and ", tooShort) + " to at least " + wholeSecondsAbove(hungRenewal)
				+ ", or lower the renew or the retry interval");
	}

	// The coordinators that count in whole seconds take only those: the smallest one
	// above the given duration.
	private static Duration wholeSecondsAbove(Duration duration) {
		return Duration.ofSeconds(duration.getSeconds() + 1);
	}

	/**
	 * Returns how long a node believes in its leadership after sending a successful
	 * acquire or renewal.
	 * @return the lease duration minus the safety margin
	 */
	public Duration safeWindow() {
		return this.duration.minus(this.safetyMargin);
	}

	private static String describeFailedRenewal(Duration renewInterval, Duration retryInterval, Duration safetyMargin) {
		return "leader.lease.renew-interval (" + renewInterval + ") plus leader.lease.retry-interval (" + retryInterval
				+ ") plus leader.lease.safety-margin (" + safetyMargin + ")";
	}

	private static void requireInRange(String property, Duration value, boolean zeroAllowed) {
		if (value == null || value.isNegative() || (!zeroAllowed && value.isZero())) {
			throw new IllegalArgumentException(
					property + " must " + (zeroAllowed ? "not be negative" : "be positive") + ", was " + value);
		}
		if (value.compareTo(MAX_DURATION) > 0) {
			throw new IllegalArgumentException(property + " must be at most 24 days (PT576H), was " + value
					+ ": PostgreSQL takes the timeouts derived from the starter's durations as an int of milliseconds, "
					+ "which ends at 24.8 days");
		}
	}

}
