package dev.leader.lease;

import java.time.Duration;

/**
 * Receives the measurements of a {@link LeaderEngine} that its events do not carry, for
 * metrics. Set with {@link LeaderEngine#setMonitor(LeaseMonitor)}.
 * <p>
 * Called on the thread that made the engine's round trip, usually {@code leader-io},
 * while the engine holds its lock: an implementation must return at once and must not
 * call back into the engine. An exception it throws is logged and ignored.
 */
@FunctionalInterface
public interface LeaseMonitor {

	/**
	 * A monitor that ignores every measurement.
	 */
	LeaseMonitor NONE = (group, duration) -> {
	};

	/**
	 * Called when this node reads a new term of a group, with the time the group went
	 * without a valid lease before it, as this node saw it: from the end of the previous
	 * lease, as last read, until the new term was read. Zero when the previous lease was
	 * replaced before it ended (a release this node did not read).
	 * @param group the group
	 * @param duration the time without a valid lease
	 */
	void leaderless(String group, Duration duration);

}
