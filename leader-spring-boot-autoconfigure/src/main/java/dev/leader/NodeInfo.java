package dev.leader;

import java.time.Instant;

/**
 * A cluster member as read from the coordinator. Times are database time.
 *
 * @param id the node id
 * @param name the node's name, by default the application name
 * @param host the host name the node runs on
 * @param pid the process id
 * @param startedAt when the node registered
 * @param heartbeatAt when the node last heartbeated
 * @param alive whether the last heartbeat is within the node expiry
 */
public record NodeInfo(String id, String name, String host, long pid, Instant startedAt, Instant heartbeatAt,
		boolean alive) {
}
