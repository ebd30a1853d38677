package dev.leader.daemon;

import java.time.Duration;

import dev.leader.node.Names;

/**
 * The timing of daemon assignment. The relations between the values are checked on creation, with messages that name
 * the {@code leader.daemons.*} properties to change.
 *
 * @param group the group whose leader assigns the daemons
 * @param ackTimeout how long an assignment may stay ASSIGNING before the leader gives it to another node
 * @param drainTimeout how long a revoked daemon may take to stop before it is handed over regardless
 * @param maxMovesPerCycle how many daemons the leader revokes at most per cycle to rebalance
 * @param settleWindow how long after the last change of the live nodes the leader waits before it rebalances
 */
public record DaemonSettings(String group, Duration ackTimeout, Duration drainTimeout, int maxMovesPerCycle,
		Duration settleWindow) {

	/**
	 * Creates settings, checking the relations between them.
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
		requirePositive("leader.daemons.ack-timeout", ackTimeout);
		requirePositive("leader.daemons.drain-timeout", drainTimeout);
		if (settleWindow == null || settleWindow.isNegative()) {
			throw new IllegalArgumentException("leader.daemons.settle-window must not be negative, was " + settleWindow);
		}
		if (maxMovesPerCycle < 1) {
			throw new IllegalArgumentException(
					"leader.daemons.max-moves-per-cycle must be at least 1, was " + maxMovesPerCycle);
		}
	}

	/**
	 * Returns the defaults: group {@code default}, 30 s acknowledge and drain timeouts, 2 moves per cycle and a 10 s
	 * settle window.
	 * @return the default settings
	 */
	public static DaemonSettings defaults() {
		return new DaemonSettings("default", Duration.ofSeconds(30), Duration.ofSeconds(30), 2, Duration.ofSeconds(10));
	}

	private static void requirePositive(String property, Duration value) {
		if (value == null || value.isZero() || value.isNegative()) {
			throw new IllegalArgumentException(property + " must be positive, was " + value);
		}
	}

}
