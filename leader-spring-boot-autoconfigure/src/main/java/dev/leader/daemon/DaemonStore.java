package dev.leader.daemon;

import java.time.Duration;

import dev.leader.FencingToken;
import org.jspecify.annotations.Nullable;

/**
 * The seam between the daemon coordinator and the database. Every method is one atomic statement, every time is the
 * database's, and every transition is a compare-and-set on the daemon's generation, so that a write based on an
 * outdated read changes nothing. Implementations throw {@link org.springframework.dao.DataAccessException} when the
 * database cannot be reached.
 * <p>
 * The leader's writes take its {@link FencingToken}: they lock the lease row {@code FOR SHARE} and change nothing
 * unless the node still holds the lease with that term, unexpired, so a deposed leader cannot change assignments.
 */
public interface DaemonStore {

	/**
	 * Reads the nodes, their daemons and liveness, and every assignment.
	 * @param nodeExpiry how long after its last heartbeat a node counts as dead
	 * @return the snapshot
	 */
	DaemonSnapshot read(Duration nodeExpiry);

	/**
	 * Assigns a daemon that has no live assignment to a node: state ASSIGNING, the next generation.
	 * @param leader the leader's token
	 * @param leaderNode the leader's node id
	 * @param daemon the daemon
	 * @param node the node to run it
	 * @param deletedGeneration the generation of the daemon's DELETED assignment, 0 if it was never assigned
	 * @return the new generation, or 0 if nothing changed
	 */
	long assign(FencingToken leader, String leaderNode, String daemon, String node, long deletedGeneration);

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
	 * Deletes an assignment without waiting for its node: the node is dead, did not acknowledge or did not drain.
	 * @param leader the leader's token
	 * @param leaderNode the leader's node id
	 * @param daemon the daemon
	 * @param generation the generation to delete
	 * @return whether the assignment changed
	 */
	boolean reclaim(FencingToken leader, String leaderNode, String daemon, long generation);

	/**
	 * Acknowledges an assignment on its node: ASSIGNING to ACTIVE.
	 * @param node the node
	 * @param daemon the daemon
	 * @param generation the generation
	 * @return whether the assignment changed
	 */
	boolean acknowledge(String node, String daemon, long generation);

	/**
	 * Hands an assignment back from its node, after its agent stopped or when the node cannot run it: any live state
	 * to DELETED.
	 * @param node the node
	 * @param daemon the daemon
	 * @param generation the generation
	 * @return whether the assignment changed
	 */
	boolean release(String node, String daemon, long generation);

	/**
	 * Locks a daemon's assignment row {@code FOR SHARE} in the transaction active on the calling thread, and reads it.
	 * Every transition is an {@code UPDATE} of that row, so it waits until the transaction ends.
	 * @param daemon the daemon
	 * @return the assignment, or {@code null} if the daemon was never assigned
	 * @throws org.springframework.transaction.IllegalTransactionStateException if no transaction is active
	 */
	@Nullable Assignment lock(String daemon);

}
