package dev.leader.daemon;

import java.time.Duration;

import dev.leader.lease.LeaseSettings;
import dev.leader.node.Names;

/**
 * The timing of daemon assignment. The range of each value is checked on creation, with
 * messages that name the {@code leader.daemons.*} properties to change.
 *
 * @param group the group whose leader assigns the daemons
 * @param ackTimeout how long an assignment may stay ASSIGNING before the leader gives it
 * to another node
 * @param drainTimeout how long a revoked daemon may take to stop before it is handed over
 * regardless
 * @param maxMovesPerCycle how many daemons the leader revokes at most per cycle to
 * rebalance
 * @param settleWindow how long after the last change of the live nodes the leader waits
 * before it rebalances
 */
public record DaemonSettings(String group, Duration ackTimeout, Duration drainTimeout, int maxMovesPerCycle,
		Duration settleWindow) {

	/**
	 * Creates settings, checking the range of each value.
	 * @param group the group
	 * @param ackTimeout the acknowledge timeout
	 * @param drainTimeout the drain timeout
	 * @param maxMovesPerCycle the move cap
	 * @param settleWindow the settle window
	 * @throws IllegalArgumentException naming the property to change
	 */
	public DaemonSettings {
		try {
			Names.requireValid("group name", group);
		}
		catch (IllegalArgumentException ex) {
			throw new IllegalArgumentException("leader.daemons.group: " + ex.getMessage());
		}
		requireInRange("leader.daemons.ack-timeout", ackTimeout, false);
		requireInRange("leader.daemons.drain-timeout", drainTimeout, false);
		requireInRange("leader.daemons.settle-window", settleWindow, true);
		if (maxMovesPerCycle < 1) {
			throw new IllegalArgumentException(
					"leader.daemons.max-moves-per-cycle must be at least 1, was " + maxMovesPerCycle);
		}
	}

	/**
	 * Checks the acknowledge timeout against the renew interval of a node that runs
	 * daemons: such a node polls its assignments with each heartbeat, so it acknowledges
	 * one at its next poll at the latest.
	 * @param lease the node's lease settings
	 * @throws IllegalArgumentException naming the properties to change, if the
	 * acknowledge timeout is not more than twice the renew interval
	 */
	public void requireAckTimeoutAllowsAPoll(LeaseSettings lease) {
		Duration renewInterval = lease.renewInterval();
		if (this.ackTimeout.compareTo(renewInterval.multipliedBy(2)) <= 0) {
			throw new IllegalArgumentException("leader.daemons.ack-timeout (" + this.ackTimeout
					+ ") must be more than twice leader.lease.renew-interval (" + renewInterval + "), since a node "
					+ "polls its assignments with each heartbeat; raise the timeout or lower the interval");
		}
	}

	/**
	 * Returns the defaults: group {@code default}, 30 s acknowledge and drain timeouts, 2
	 * moves per cycle and a 10 s settle window.
	 * @return the default settings
	 */
	public static DaemonSettings defaults() {
		return new DaemonSettings("default", Duration.ofSeconds(30), Duration.ofSeconds(30), 2, Duration.ofSeconds(10));
	}

	private static void requireInRange(String property, Duration value, boolean zeroAllowed) {
		if (value == null || value.isNegative() || (!zeroAllowed && value.isZero())) {
			throw new IllegalArgumentException(
					property + " must " + (zeroAllowed ? "not be negative" : "be positive") + ", was " + value);
		}
		// The same limit as the lease's durations, so that no deadline computed from them
		// overflows.
		if (value.compareTo(LeaseSettings.MAX_DURATION) > 0) {
			throw new IllegalArgumentException(property + " must be at most 24 days (PT576H), was " + value
					+ ": that is the limit of every leader.* duration");
		}
	}

}
