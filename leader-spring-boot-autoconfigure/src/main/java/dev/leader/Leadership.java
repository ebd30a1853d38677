package dev.leader;

import java.time.Duration;
import java.util.Optional;
import java.util.Set;

/**
 * This node's view of leadership, one lease per group.
 * <p>
 * <b>Guarantee.</b> At any instant of the database clock at most one node holds a group's
 * lease, and each new holder gets a strictly higher term. A node reports itself leader
 * only inside its <em>safe window</em>: from the local monotonic instant at which its
 * last successful acquire or renew was <em>sent</em>, for the lease duration minus the
 * safety margin. Two nodes therefore never both answer {@code true} from
 * {@link #isLeader(String)} for the same term, but for a short while after a crash or a
 * lost renewal no node may be leader at all. Timing bounds belief only; writes that must
 * never come from a stale leader are fenced in the database with the term (see
 * {@link FencingToken}).
 * <p>
 * All methods are thread-safe and non-blocking unless stated otherwise. A group name that
 * is neither configured in {@code leader.groups} nor named by a {@link LeaderOnly}
 * annotation is rejected with an {@link IllegalArgumentException}.
 */
public interface Leadership {

	/**
	 * Returns the id of this node, as registered in the coordinator.
	 * @return the node id
	 */
	String nodeId();

	/**
	 * Returns the groups this node takes part in.
	 * @return the group names
	 */
	Set<String> groups();

	/**
	 * Returns whether this node leads the group right now, that is, holds its lease
	 * inside the safe window.
	 * @param group the group name
	 * @return {@code true} if this node is the leader
	 */
	boolean isLeader(String group);

	/**
	 * Returns the fencing token of this node's current leadership of the group.
	 * @param group the group name
	 * @return the token, or empty when this node does not lead the group
	 */
	Optional<FencingToken> token(String group);

	/**
	 * Returns the group's leader as last read from the coordinator by this node. The view
	 * is at most one renew interval old; it can name another node as leader while that
	 * node has already lost the lease.
	 * @param group the group name
	 * @return the leader, or empty when no node held a valid lease at the last read
	 */
	Optional<LeaderInfo> leader(String group);

	/**
	 * Gives up the group's leadership if this node holds it, and stays out of the
	 * election for the yield cooldown so that another node wins. Blocks until the lease
	 * is released in the coordinator or the query timeout passes; the revoked event is
	 * published with reason {@link RevokeReason#YIELDED} either way.
	 * @param group the group name
	 * @return {@code true} if this node was the leader and stepped down
	 */
	boolean yield(String group);

	/**
	 * Waits until this node leads the group.
	 * @param group the group name
	 * @param timeout the longest time to wait
	 * @return {@code true} if this node became (or already was) the leader, {@code false}
	 * on timeout
	 * @throws InterruptedException if the waiting thread is interrupted
	 */
	boolean awaitLeadership(String group, Duration timeout) throws InterruptedException;

	/**
	 * Registers a listener for one group. Callbacks run on the {@code leader-events}
	 * thread, in the order the transitions happened, after the matching application
	 * event; a listener that throws is logged and the engine carries on.
	 * @param group the group name
	 * @param listener the listener
	 * @return a handle that unregisters the listener when closed
	 */
	Registration addListener(String group, LeadershipListener listener);

	/**
	 * Callbacks for the leadership transitions of one group on this node.
	 */
	interface LeadershipListener {

		/**
		 * Called when this node is granted the leadership.
		 * @param event the event
		 */
		default void granted(LeadershipGrantedEvent event) {
		}

		/**
		 * Called when this node's leadership ends, exactly once per grant.
		 * @param event the event
		 */
		default void revoked(LeadershipRevokedEvent event) {
		}

	}

	/**
	 * Handle of a registered listener.
	 */
	@FunctionalInterface
	interface Registration extends AutoCloseable {

		/**
		 * Unregisters the listener; later transitions are not delivered to it.
		 */
		@Override
		void close();

	}

}
