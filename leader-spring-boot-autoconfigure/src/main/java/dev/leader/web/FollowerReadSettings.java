package dev.leader.web;

import java.time.Duration;

/**
 * The settings of follower reads ({@code leader.follower-reads.*}).
 *
 * @param localWait the longest a read waits at a node before it counts as unservable
 * there
 * @param forward whether an unservable read is forwarded to the leader, rather than
 * answered 503
 * @param defaultConsistency the consistency of a read whose request asks for none
 * @param forwardTimeout the longest a forwarded request may take
 * @param retryAfterSeconds the value of {@code Retry-After} in a 503 answer
 */
record FollowerReadSettings(Duration localWait, boolean forward, ReadConsistency defaultConsistency,
		Duration forwardTimeout, long retryAfterSeconds) {

	/**
	 * Creates the settings, checking them.
	 * @param localWait the wait
	 * @param forward whether to forward
	 * @param defaultConsistency the default consistency
	 * @param forwardTimeout the forward timeout
	 * @param retryAfterSeconds the Retry-After seconds
	 */
	FollowerReadSettings {
		requirePositive("leader.follower-reads.wait", localWait);
		requirePositive("leader.follower-reads.forward-timeout", forwardTimeout);
		if (retryAfterSeconds < 1) {
			throw new IllegalArgumentException(
					"leader.follower-reads.retry-after must be at least 1 s, was " + retryAfterSeconds + " s");
		}
	}

	private static void requirePositive(String property, Duration value) {
		if (value.isNegative() || value.isZero() || value.compareTo(Duration.ofDays(1)) > 0) {
			throw new IllegalArgumentException(property + " must be more than 0 and at most 1 day, was " + value);
		}
	}

}
