package dev.leader.test;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import dev.leader.lease.CoordinationStore;
import dev.leader.lease.CoordinationStore.AcquireResult;
import dev.leader.node.NodeRegistration;

/**
 * Asks a store for a lease as the engine does, for tests that drive a store by hand: a
 * store grants leases only to the process that registered the node, so the node is
 * registered, or heartbeated, first.
 */
public final class Grants {

	private static final Duration NODE_EXPIRY = Duration.ofSeconds(10);

	private Grants() {
	}

	/**
	 * Returns the registration under which {@link #acquire} registers a node id.
	 * @param nodeId the node id
	 * @return the registration, of pid 1 on host {@code host-<node id>}
	 */
	public static NodeRegistration node(String nodeId) {
		return new NodeRegistration(nodeId, nodeId, "host-" + nodeId, 1);
	}

	/**
	 * Registers the node ({@link #node}), or heartbeats it, then asks for the lease.
	 * @param store the store
	 * @param group the group
	 * @param nodeId the node id
	 * @param duration the lease duration
	 * @return the outcome
	 */
	public static AcquireResult acquire(CoordinationStore store, String group, String nodeId, Duration duration) {
		return acquire(store, group, node(nodeId), duration);
	}

	/**
	 * Registers the node, or heartbeats it, then asks for the lease.
	 * @param store the store
	 * @param group the group
	 * @param node the node, as its process registers it
	 * @param duration the lease duration
	 * @return the outcome
	 */
	public static AcquireResult acquire(CoordinationStore store, String group, NodeRegistration node,
			Duration duration) {
		store.tick(node, Map.of(), List.of(), duration, NODE_EXPIRY);
		return store.acquire(group, node, duration);
	}

}
