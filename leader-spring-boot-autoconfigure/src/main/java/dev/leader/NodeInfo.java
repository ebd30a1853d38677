package dev.leader;

import java.time.Instant;

import org.jspecify.annotations.Nullable;

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
 * @param baseUrl the URL other nodes reach the node's web application at, such as
 * {@code http://10.0.0.7:8080}, or {@code null} if it advertises none
 * ({@code leader.node.base-url})
 * @param zone the zone or region the node runs in, or {@code null} if it advertises none
 * ({@code leader.node.zone})
 */
public record NodeInfo(String id, String name, String host, long pid, Instant startedAt, Instant heartbeatAt,
		boolean alive, @Nullable String baseUrl, @Nullable String zone) {

	/**
	 * Creates the information of a node that advertises no address.
	 * @param id the node id
	 * @param name the node's name
	 * @param host the host name
	 * @param pid the process id
	 * @param startedAt when the node registered
	 * @param heartbeatAt when the node last heartbeated
	 * @param alive whether the last heartbeat is within the node expiry
	 */
	public NodeInfo(String id, String name, String host, long pid, Instant startedAt, Instant heartbeatAt,
			boolean alive) {
		this(id, name, host, pid, startedAt, heartbeatAt, alive, null, null);
	}

}
