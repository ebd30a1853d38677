package dev.leader.lease;

import java.time.Duration;

/**
 * The timing of the election engine. The relations between the values are checked on creation, with messages that
 * name the {@code leader.*} properties to change.
 *
 * @param duration how long a lease lasts after each acquire or renewal
 * @param renewInterval how often a node heartbeats and renews its leases, in one round trip
 * @param retryInterval the wait before retrying after a failed round trip
 * @param safetyMargin how much earlier than the lease a node stops believing it leads, to absorb clock-rate drift
 * @param nodeExpiry how long after its last heartbeat a node counts as dead
 * @param yieldCooldown how long a node that yielded stays out of the election
 */
public record LeaseSettings(Duration duration, Duration renewInterval, Duration retryInterval, Duration safetyMargin,
		Duration nodeExpiry, Duration yieldCooldown) {

	/**
	 * Creates settings, checking the relations between them.
	 * @param duration the lease duration
	 * @param renewInterval the renew interval
	 * @param retryInterval the retry interval
	 * @param safetyMargin the safety margin
	 * @param nodeExpiry the node expiry
	 * @param yieldCooldown the yield cooldown
	 * @throws IllegalArgumentException naming the property to change
	 */
	public LeaseSettings {
		requirePositive("leader.lease.duration", duration);
		requirePositive("leader.lease.renew-interval", renewInterval);
		requirePositive("leader.lease.retry-interval", retryInterval);
		requirePositive("leader.node.expiry", nodeExpiry);
		if (safetyMargin.isNegative()) {
			throw new IllegalArgumentException("leader.lease.safety-margin must not be negative, was " + safetyMargin);
		}
		if (yieldCooldown.isNegative()) {
			throw new IllegalArgumentException("leader.lease.yield-cooldown must not be negative, was " + yieldCooldown);
		}
		if (renewInterval.multipliedBy(2).compareTo(duration) >= 0) {
			throw new IllegalArgumentException("leader.lease.renew-interval (" + renewInterval
					+ ") must be less than half of leader.lease.duration (" + duration
					+ ") so that a missed renewal can be retried before the lease expires; "
					+ "lower the renew interval or raise the duration");
		}
		if (safetyMargin.plus(renewInterval).compareTo(duration) >= 0) {
			throw new IllegalArgumentException("leader.lease.safety-margin (" + safetyMargin
					+ ") plus leader.lease.renew-interval (" + renewInterval + ") must be less than leader.lease.duration ("
					+ duration + "), otherwise the safe window closes before the next renewal; lower the margin");
		}
		if (nodeExpiry.compareTo(renewInterval.multipliedBy(2)) < 0) {
			throw new IllegalArgumentException("leader.node.expiry (" + nodeExpiry
					+ ") must be at least twice leader.lease.renew-interval (" + renewInterval
					+ "), the heartbeat interval, so that one late heartbeat does not declare a node dead; "
					+ "raise the expiry or lower the renew interval");
		}
	}

	/**
	 * Returns the defaults: a 10 s lease renewed every 3 s, retries after 2 s, a 200 ms safety margin, a 10 s node
	 * expiry and a 10 s yield cooldown.
	 * @return the default settings
	 */
	public static LeaseSettings defaults() {
		return new LeaseSettings(Duration.ofSeconds(10), Duration.ofSeconds(3), Duration.ofSeconds(2),
				Duration.ofMillis(200), Duration.ofSeconds(10), Duration.ofSeconds(10));
	}

	/**
	 * Returns how long a node believes in its leadership after sending a successful acquire or renewal.
	 * @return the lease duration minus the safety margin
	 */
	public Duration safeWindow() {
		return this.duration.minus(this.safetyMargin);
	}

	private static void requirePositive(String property, Duration value) {
		if (value == null || value.isZero() || value.isNegative()) {
			throw new IllegalArgumentException(property + " must be positive, was " + value);
		}
	}

}
