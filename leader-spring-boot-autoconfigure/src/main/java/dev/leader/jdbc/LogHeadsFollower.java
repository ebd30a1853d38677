package dev.leader.jdbc;

import java.util.Map;

/**
 * Receives the last indexes of the groups' decision logs that a coordination store's
 * heartbeat reads with the groups' leases, so that a log store's followers catch up
 * without a statement of their own.
 */
@FunctionalInterface
interface LogHeadsFollower {

	/**
	 * Called after a heartbeat.
	 * @param heads the last index of each group the heartbeat read, 0 for a log without
	 * entries
	 * @param sentAt when the heartbeat was sent, on {@link System#nanoTime()}
	 */
	void heads(Map<String, Long> heads, long sentAt);

}
