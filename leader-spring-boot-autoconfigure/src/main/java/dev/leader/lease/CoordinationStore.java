package dev.leader.lease;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;

import dev.leader.NodeInfo;
import dev.leader.node.NodeRegistration;

/**
 * The seam between the election engine and the coordinator. Every method is one atomic
 * round trip whose time comparisons use the coordinator's clock, never the caller's.
 * Implementations throw {@link org.springframework.dao.DataAccessException} when the
 * coordinator cannot be reached or answers with an error.
 * <p>
 * The contract is pinned by {@code AbstractCoordinationStoreContractTests}; a new store
 * passes that suite.
 */
public interface CoordinationStore {

	/**
	 * Takes the group's lease for the node if it is free, expired, or already held by
	 * that node. The term rises on every grant, including a grant to the node that held a
	 * valid lease: a node asks for a lease only when it does not hold it, so a valid
	 * lease under its id belongs to an earlier leadership it stepped down from, or to
	 * another process started with the same id, and a term must never serve two of them.
	 * The term rises by one, or to the first term of the coordinator's epoch if that is
	 * higher (on PostgreSQL, after a promotion; the first epoch starts at 1), and the
	 * lease is created with that first term when the group has none. A change of holder
	 * or term waits for the transactions that guard the old term.
	 * <p>
	 * Only the process that registered the node id ({@link #tick}) is granted a lease,
	 * and the grant counts as a heartbeat of that registration: it is checked and
	 * refreshed in the same atomic step as the grant, after any wait for the lease, so
	 * that another process cannot take the id over (once it was silent for the node
	 * expiry) between the check and the grant, nor register the id while missing the
	 * lease granted. A node that is not registered, or whose id another process
	 * registered, is refused.
	 * @param group the group
	 * @param node the node asking, as this process registers it
	 * @param duration the lease duration
	 * @return the outcome; when refused, the lease as it stands
	 */
	AcquireResult acquire(String group, NodeRegistration node, Duration duration);

	/**
	 * The steady-state round trip of a node: registers or heartbeats the node, renews
	 * every lease it holds (but one granted in an earlier epoch of the coordinator, such
	 * as before a PostgreSQL promotion: its holder steps down and acquires it again,
	 * under a term of the current epoch), forgets nodes that have been dead for longer
	 * than the node expiry, and reads the leases of the given groups and the member list.
	 * The node's registration belongs to one process: while another process that
	 * registered the same id has heartbeated within the node expiry, nothing is
	 * registered or renewed.
	 * @param node the node
	 * @param held the terms of the leases the node believes it holds, by group
	 * @param groups the groups whose leases to read
	 * @param leaseDuration the lease duration to renew for
	 * @param nodeExpiry the node expiry
	 * @return the renewed leases, the leases of the groups, and the members
	 * @throws org.springframework.dao.DuplicateKeyException if another live process has
	 * registered the node's id
	 */
	Tick tick(NodeRegistration node, Map<String, Long> held, Collection<String> groups, Duration leaseDuration,
			Duration nodeExpiry);

	/**
	 * Releases the given leases if the node still holds them with the given terms: no
	 * holder, expiry now, term kept. Nodes waiting for one of these groups are woken
	 * where the store supports notifications.
	 * @param nodeId the node
	 * @param held the terms to release, by group
	 * @return the groups actually released
	 */
	Collection<String> release(String nodeId, Map<String, Long> held);

	/**
	 * Gives up the given leases, as a node that steps down gracefully does, if it still
	 * holds them with the given terms: released, or, for a store that can, handed to the
	 * node it would name to try first, which then takes the lease under a new term
	 * without competing for it. The node that receives a lease is told through
	 * {@link ReleaseListener#released}, as a named successor is; a store that hands over
	 * gives a lease back that its receiver does not take. By default, {@link #release}.
	 * @param nodeId the node
	 * @param held the terms to give up, by group
	 * @return the groups actually released or handed over
	 */
	default Collection<String> handOver(String nodeId, Map<String, Long> held) {
		return release(nodeId, held);
	}

	/**
	 * Removes the node from the member list, so that other nodes see it leave at once, if
	 * its registration is still this process's: a process that stops after another one
	 * took its node id over (once it had been silent for the node expiry) leaves the
	 * other's registration alone.
	 * @param node the node, as this process registers it
	 */
	void deregister(NodeRegistration node);

	/**
	 * Reads the leases of all groups.
	 * @return the leases
	 */
	List<LeaseState> leases();

	/**
	 * Gives back what the store keeps between round trips, such as a connection. The
	 * store stays usable: the next round trip takes what it needs again. Wake-up
	 * deliveries are not affected; their handles stop them, and this waits until a
	 * stopped delivery has given back what it held too. The engine calls this when it
	 * stops, after stopping its delivery.
	 */
	default void disconnect() {
	}

	/**
	 * Starts delivering wake-ups for released leases, if the store supports them.
	 * @param listener called with the group name and the node that should try first, on a
	 * thread of the store's
	 * @return a handle that stops the delivery
	 */
	default AutoCloseable listen(ReleaseListener listener) {
		return () -> {
		};
	}

	/**
	 * Receives the group names of released leases.
	 */
	@FunctionalInterface
	interface ReleaseListener {

		/**
		 * Called when a group's lease has been released.
		 * @param group the group
		 * @param successor the node that should try to acquire first, so that the others
		 * do not compete with it: the registered node that has run longest, apart from
		 * the one that released; {@code null} if the store names none, and then every
		 * node may try at once
		 */
		void released(String group, @org.jspecify.annotations.Nullable String successor);

		/**
		 * Called when another node handed a group's lease to a node of this store
		 * ({@link CoordinationStore#handOver}), for a store that hands leases over: that
		 * node takes the lease by acquiring it, or, if it will not acquire it now (it
		 * stops, does not take part in the group, or cools down after a yield), gives it
		 * back at once with {@link CoordinationStore#release}, so that the others may. By
		 * default, {@link #released} naming that node.
		 * @param group the group
		 * @param node the node the lease was handed to
		 * @param term the term it was handed over under
		 */
		default void handedOver(String group, String node, long term) {
			released(group, node);
		}

		/**
		 * Called when the database session that bound leases of this node ended, for a
		 * store that binds the leases of crash-takeover groups to a session of the node:
		 * other nodes may take them over from now on, so the node must stop leading them
		 * at once.
		 * @param terms the terms that session bound, by group
		 */
		default void sessionLost(Map<String, Long> terms) {
		}

		/**
		 * Called when the database session that bound this node itself ended, for a store
		 * that binds nodes to sessions (the daemons group is a crash-takeover group):
		 * every node counts this one dead from now on, and the daemons leader may give
		 * its daemons to others, so it must stop running them at once. Called after
		 * {@link #sessionLost} when the session bound leases too.
		 */
		default void nodeSessionLost() {
		}

	}

	/**
	 * The outcome of {@link #acquire}.
	 *
	 * @param granted whether the node holds the lease now
	 * @param lease the lease after the attempt, or {@code null} if it could not be read
	 */
	record AcquireResult(boolean granted, @org.jspecify.annotations.Nullable LeaseState lease) {
	}

	/**
	 * The outcome of {@link #tick}.
	 *
	 * @param renewed the leases renewed, by group
	 * @param leases the leases of the requested groups, as they stood at the start of the
	 * round trip
	 * @param members the members, dead ones included until they are forgotten
	 */
	record Tick(Map<String, LeaseState> renewed, Map<String, LeaseState> leases, List<NodeInfo> members) {
	}

}
