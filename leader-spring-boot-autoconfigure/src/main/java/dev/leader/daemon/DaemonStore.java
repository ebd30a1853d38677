package dev.leader.daemon;

import java.time.Duration;
import java.time.Instant;
import java.util.function.Consumer;

import dev.leader.FencingToken;
import org.jspecify.annotations.Nullable;

/**
 * The seam between the daemon coordinator and the database. Every method is one atomic
 * statement, every time is the database's, and every transition is a compare-and-set on
 * the daemon's generation, so that a write based on an outdated read changes nothing.
 * Implementations throw {@link org.springframework.dao.DataAccessException} when the
 * database cannot be reached.
 * <p>
 * The leader's writes take its {@link FencingToken}: they lock the lease row as a guard
 * does and change nothing unless the node still holds the lease with that term,
 * unexpired, so a deposed leader cannot change assignments.
 * <p>
 * Guarding a write inside the application's transaction is not part of this interface:
 * only a store kept in the application's SQL database can offer it, as a
 * {@link DaemonGuard}.
 */
public interface DaemonStore {

	/**
	 * Reads the nodes, their daemons and liveness, and every assignment.
	 * @param nodeExpiry how long after its last heartbeat a node counts as dead
	 * @return the snapshot
	 */
	DaemonSnapshot read(Duration nodeExpiry);

	/**
	 * Assigns a daemon that has no live assignment to a node: state ASSIGNING, the next
	 * generation.
	 * @param leader the leader's token
	 * @param leaderNode the leader's node id
	 * @param daemon the daemon
	 * @param node the node to run it
	 * @param deletedGeneration the generation of the daemon's DELETED assignment, 0 if it
	 * was never assigned
	 * @return the new generation, or 0 if nothing changed
	 */
	default long assign(FencingToken leader, String leaderNode, String daemon, String node, long deletedGeneration) {
		return assign(leader, leaderNode, daemon, node, deletedGeneration, null);
	}

	/**
	 * Assigns a daemon that has no live assignment to a node: state ASSIGNING, the next
	 * generation; and, in the same statement, deletes the move request that the
	 * assignment carries out, if it is still the one recorded then.
	 * @param leader the leader's token
	 * @param leaderNode the leader's node id
	 * @param daemon the daemon
	 * @param node the node to run it
	 * @param deletedGeneration the generation of the daemon's DELETED assignment, 0 if it
	 * was never assigned
	 * @param requestedAt when the move request this assignment carries out was recorded,
	 * or {@code null}
	 * @return the new generation, or 0 if nothing changed
	 */
	long assign(FencingToken leader, String leaderNode, String daemon, String node, long deletedGeneration,
			@Nullable Instant requestedAt);

	/**
	 * Asks the node to stop a daemon: ASSIGNING or ACTIVE to REVOKING.
	 * @param leader the leader's token
	 * @param leaderNode the leader's node id
	 * @param daemon the daemon
	 * @param generation the generation to revoke
	 * @return whether the assignment changed
	 */
	boolean revoke(FencingToken leader, String leaderNode, String daemon, long generation);

	/**
	 * Deletes an assignment without waiting for its node: the node is dead, did not
	 * acknowledge or did not drain. Changes nothing unless the assignment is still in the
	 * state the leader read, so that an acknowledgement that committed after the read
	 * (ASSIGNING to ACTIVE) is never undone by a reclaim for the ack timeout: the node
	 * starts its agent once its acknowledgement succeeded, and only a revoke may then
	 * take the daemon back while the node is alive.
	 * @param leader the leader's token
	 * @param leaderNode the leader's node id
	 * @param daemon the daemon
	 * @param generation the generation to delete
	 * @param state the live state the assignment was read in
	 * @return whether the assignment changed
	 */
	boolean reclaim(FencingToken leader, String leaderNode, String daemon, long generation, AssignmentState state);

	/**
	 * Acknowledges an assignment on its node: ASSIGNING to ACTIVE.
	 * @param node the node
	 * @param daemon the daemon
	 * @param generation the generation
	 * @return whether the assignment changed
	 */
	boolean acknowledge(String node, String daemon, long generation);

	/**
	 * Hands an assignment back from its node, after its agent stopped or when the node
	 * cannot run it: any live state to DELETED.
	 * @param node the node
	 * @param daemon the daemon
	 * @param generation the generation
	 * @return whether the assignment changed
	 */
	boolean release(String node, String daemon, long generation);

	/**
	 * Records an operator's request for the leader, replacing an older one of the same
	 * kind for the same daemon. Any node may call it; it changes no assignment.
	 * @param kind the kind
	 * @param daemon the daemon to move, or the empty string for a rebalance
	 * @param node the node to move it to, or {@code null}
	 * @return the request as recorded
	 */
	DaemonRequest request(DaemonRequest.Kind kind, String daemon, @Nullable String node);

	/**
	 * Drains or undrains a node. Any node may call it; the leader acts on it in its next
	 * cycle.
	 * @param node the node
	 * @param drained whether the node is to be drained
	 * @return whether the coordinator knows the node
	 */
	boolean drain(String node, boolean drained);

	/**
	 * Deletes a request the leader carried out or cannot carry out, if it is still the
	 * one recorded then.
	 * @param leader the leader's token
	 * @param leaderNode the leader's node id
	 * @param request the request as read
	 * @return whether it was deleted
	 */
	boolean forget(FencingToken leader, String leaderNode, DaemonRequest request);

	/**
	 * Starts delivering notifications of assignment changes, where the store supports
	 * them: the id of the node whose assignment the leader changed, or the empty string
	 * for a change the leader should look at. Delivery is best effort; the cycles poll
	 * anyway.
	 * @param listener called on a thread of the store's
	 * @return a handle that stops the delivery
	 */
	default AutoCloseable listen(Consumer<String> listener) {
		return () -> {
		};
	}

	/**
	 * Starts delivering the snapshot that the store reads in the same statement as this
	 * node's heartbeat, where it can, so that polling the assignments costs no statement
	 * of its own. Each snapshot is as of its heartbeat, and may be older than one
	 * {@link #read} returned meanwhile.
	 * @param follower called with each snapshot, on the thread that sent the heartbeat;
	 * it must return quickly
	 * @return a handle that stops the delivery, or {@code null} if the store cannot
	 * deliver snapshots: the coordinator then calls {@link #read} once per heartbeat
	 * interval
	 */
	default @Nullable AutoCloseable followHeartbeat(Consumer<DaemonSnapshot> follower) {
		return null;
	}

}
