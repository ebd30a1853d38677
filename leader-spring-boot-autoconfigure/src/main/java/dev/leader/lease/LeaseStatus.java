package dev.leader.lease;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import dev.leader.NodeInfo;

/**
 * A read-only view of this node's leases and of the members, for endpoints, health
 * indicators and metrics. Every method may be called from any thread and returns at once,
 * without a round trip: it reflects what this node last read or did, which lags the
 * database by up to one renew interval.
 */
public interface LeaseStatus {

	/**
	 * Returns this node's id.
	 * @return the node id
	 */
	String nodeId();

	/**
	 * Returns the groups this node takes part in.
	 * @return the group names
	 */
	Set<String> groups();

	/**
	 * Returns whether this node leads the group, inside its safe window.
	 * @param group the group
	 * @return whether it leads
	 * @throws IllegalArgumentException if the group is unknown
	 */
	boolean isLeader(String group);

	/**
	 * Returns the lease of a group as last read by this node.
	 * @param group the group
	 * @return the lease, or empty if none was read yet
	 * @throws IllegalArgumentException if the group is unknown
	 */
	Optional<LeaseState> lease(String group);

	/**
	 * Returns the time left in this node's safe window for the group, on the local
	 * monotonic clock: the node steps down when it runs out without a renewal.
	 * @param group the group
	 * @return the time left, or empty when this node does not lead the group
	 * @throws IllegalArgumentException if the group is unknown
	 */
	Optional<Duration> safeWindowRemaining(String group);

	/**
	 * Returns how long ago, on the local monotonic clock, this node sent the last
	 * heartbeat that succeeded. The time counts from the send, not the reply, as the safe
	 * window does: the coordinator wrote the heartbeat no earlier, so it cannot have
	 * counted this node dead before this time reaches the node expiry, however long the
	 * reply took.
	 * @return the time since that heartbeat was sent, or empty if no heartbeat has
	 * succeeded yet
	 */
	Optional<Duration> sinceLastHeartbeat();

	/**
	 * Returns how many times the coordinator's session that bound this node ended (when
	 * {@code leader.lease.crash-takeover-groups} names the daemons group), so that the
	 * daemons of a node bound to its session stop the moment it changes.
	 * @return the count since the node was created
	 */
	long sessionsLost();

	/**
	 * Returns whether the coordinator's session that bound this node ended at or after
	 * the given instant.
	 * @param nanoTime the instant, on {@link System#nanoTime()}
	 * @return whether it did
	 */
	boolean sessionLostSince(long nanoTime);

	/**
	 * Returns the members as last read.
	 * @return the members
	 */
	List<NodeInfo> members();

	/**
	 * Returns the timing of the leases.
	 * @return the settings
	 */
	LeaseSettings settings();

	/**
	 * Returns how often this node saw the database clock step forward by more than the
	 * safety margin between two heartbeats.
	 * @return the number of steps seen since the node started
	 */
	long databaseClockSteps();

}
