package dev.leader.test;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import dev.leader.lease.CoordinationStore;
import dev.leader.lease.CoordinationStore.AcquireResult;
import dev.leader.lease.LeaseState;
import dev.leader.node.NodeRegistration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the groups of tests of {@link AbstractCoordinationStoreContractTests} share: the
 * group, the nodes and the durations, and taking a lease that must be granted, which the
 * other contract suites do too.
 */
abstract class CoordinationContract {

	static final String GROUP = "orders";

	static final Duration LONG = Duration.ofSeconds(10);

	static final Duration SHORT = Duration.ofMillis(400);

	/**
	 * A lease that the next statement must find held, even after a pause of the test's
	 * JVM on a loaded machine, and that expires soon after.
	 */
	static final Duration CONTESTED = Duration.ofSeconds(2);

	static final Duration NODE_EXPIRY = Duration.ofSeconds(10);

	static final Duration WAIT = Duration.ofSeconds(5);

	static final Duration POLL = Duration.ofMillis(20);

	static final NodeRegistration A = new NodeRegistration("node-a", "app-a", "host-a", 101);

	static final NodeRegistration B = new NodeRegistration("node-b", "app-b", "host-b", 102);

	static final NodeRegistration C = new NodeRegistration("node-c", "app-c", "host-c", 103);

	/**
	 * Another process started with {@link #A}'s node id.
	 */
	static final NodeRegistration A_AGAIN = new NodeRegistration(A.id(), A.name(), A.host(), A.pid() + 1000);

	/**
	 * Registers a node, or heartbeats it, then asks for a lease for it, as the engine
	 * does: a store grants leases only to the process that registered the node.
	 * @param store the coordination store
	 * @param group the group
	 * @param node the node that asks
	 * @param duration the lease's duration
	 * @return the outcome
	 */
	static AcquireResult acquire(CoordinationStore store, String group, NodeRegistration node, Duration duration) {
		store.tick(node, Map.of(), List.of(), LONG, NODE_EXPIRY);
		return store.acquire(group, node, duration);
	}

	/**
	 * Registers a node, or heartbeats it, then acquires a lease for it and checks that it
	 * was granted.
	 * @param store the coordination store
	 * @param group the group
	 * @param node the node that acquires it
	 * @param duration the lease's duration
	 * @return the granted lease
	 */
	static LeaseState grant(CoordinationStore store, String group, NodeRegistration node, Duration duration) {
		AcquireResult result = acquire(store, group, node, duration);
		assertThat(result.granted()).as("%s granted to %s", group, node.id()).isTrue();
		assertThat(result.lease()).isNotNull();
		return result.lease();
	}

}
