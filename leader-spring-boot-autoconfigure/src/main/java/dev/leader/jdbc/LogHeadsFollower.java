package dev.leader.jdbc;

import java.util.Map;

import dev.leader.log.Bookmark;

/**
 * Receives the last entries of the groups' decision logs that a coordination store's
 * heartbeat reads with the groups' leases, so that a log store's followers catch up
 * without a statement of their own.
 */
@FunctionalInterface
public interface LogHeadsFollower {

	/**
	 * Called after a heartbeat.
	 * @param heads the last entry of each group the heartbeat read, the start of the log
	 * for a log without entries
	 * @param sentAt when the heartbeat was sent, on {@link System#nanoTime()}
	 */
	void heads(Map<String, Bookmark> heads, long sentAt);

}
