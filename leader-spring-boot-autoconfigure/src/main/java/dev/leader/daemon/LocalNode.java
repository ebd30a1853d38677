package dev.leader.daemon;

import java.time.Duration;
import java.util.Optional;

import dev.leader.FencingToken;
import dev.leader.Leadership;
import dev.leader.lease.Enrolment;
import dev.leader.lease.LeaseSettings;
import dev.leader.lease.LeaseStatus;

/**
 * This node as the daemon package sees its leadership: its id and timing, whether it
 * leads the daemons group, and when it sent its last heartbeat that succeeded. The
 * helpers of the coordinator depend on this rather than on the engine, so that they can
 * be tested without one. Every method may be called from any thread.
 */
interface LocalNode {

	/**
	 * Returns this node's id.
	 * @return the node id
	 */
	String id();

	/**
	 * Returns the engine's timing.
	 * @return the lease settings
	 */
	LeaseSettings lease();

	/**
	 * Returns whether this node leads the daemons group. A node without agents whose
	 * groups do not name it takes no part in its election, and never leads it.
	 * @return whether it leads
	 */
	boolean leads();

	/**
	 * Returns the token of the daemons group while this node {@linkplain #leads() leads}
	 * it.
	 * @return the token, or empty on any other node
	 */
	Optional<FencingToken> token();

	/**
	 * Returns how long ago this node sent its last heartbeat that succeeded, on the
	 * monotonic clock.
	 * @return the time since the send, or empty if no heartbeat has succeeded yet
	 */
	Optional<Duration> sinceLastHeartbeat();

	/**
	 * Returns how many times the database session that binds this node ended
	 * ({@link LeaderEngine#sessionsLost()}): a change means that the leader may have
	 * given this node's daemons to other nodes.
	 * @return the count
	 */
	long sessionsLost();

	/**
	 * Returns whether the database session that binds this node ended at or after the
	 * given instant ({@link LeaderEngine#sessionLostSince}).
	 * @param nanoTime the instant, on {@link System#nanoTime()}
	 * @return whether it did
	 */
	boolean sessionLostSince(long nanoTime);

	/**
	 * Runs an action each time {@link #sessionsLost()} rises.
	 * @param action the action, run on a thread of the engine's store; it must return
	 * quickly
	 */
	void onSessionLost(Runnable action);

	/**
	 * Returns how often every node polls its assignments: with each heartbeat.
	 * @return the engine's renew interval
	 */
	default Duration pollInterval() {
		return lease().renewInterval();
	}

	/**
	 * Returns how long after the send of its last heartbeat that succeeded this node
	 * keeps its daemons: the node expiry minus the safety margin.
	 * @return the limit
	 */
	default Duration heartbeatLimit() {
		return lease().nodeExpiry().minus(lease().safetyMargin());
	}

	/**
	 * Returns whether this node sent its last heartbeat that succeeded less than
	 * {@link #heartbeatLimit()} ago. Counted from the send, since the database may have
	 * written the heartbeat long before the reply arrived, and counts the node dead the
	 * node expiry after that write.
	 * @return whether it may run daemons
	 */
	default boolean heartbeatIsRecent() {
		Optional<Duration> since = sinceLastHeartbeat();
		return since.isPresent() && since.get().compareTo(heartbeatLimit()) < 0;
	}

	/**
	 * Returns the view of this node's leadership.
	 * @param leadership this node's leadership
	 * @param status its status
	 * @param enrolment where the daemons enrol with it
	 * @param group the daemons group
	 * @return the view
	 */
	static LocalNode of(Leadership leadership, LeaseStatus status, Enrolment enrolment, String group) {
		return new LocalNode() {

			@Override
			public String id() {
				return status.nodeId();
			}

			@Override
			public LeaseSettings lease() {
				return status.settings();
			}

			@Override
			public boolean leads() {
				return leadership.groups().contains(group) && leadership.isLeader(group);
			}

			@Override
			public Optional<FencingToken> token() {
				return leads() ? leadership.token(group) : Optional.empty();
			}

			@Override
			public Optional<Duration> sinceLastHeartbeat() {
				return status.sinceLastHeartbeat();
			}

			@Override
			public long sessionsLost() {
				return status.sessionsLost();
			}

			@Override
			public boolean sessionLostSince(long nanoTime) {
				return status.sessionLostSince(nanoTime);
			}

			@Override
			public void onSessionLost(Runnable action) {
				enrolment.onSessionLost(action);
			}

		};
	}

}
