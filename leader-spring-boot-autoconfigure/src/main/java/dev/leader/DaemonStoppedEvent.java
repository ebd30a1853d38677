package dev.leader;

import org.jspecify.annotations.Nullable;

/**
 * Published on a node when a run of a {@link DaemonAgent} ends, once per
 * {@link DaemonStartedEvent}.
 *
 * @param daemon the daemon
 * @param generation the assignment's generation
 * @param nodeId this node's id
 * @param reason why it stopped
 * @param failure the failure, for {@link Reason#FAILED}
 */
public record DaemonStoppedEvent(String daemon, long generation, String nodeId, Reason reason,
		@Nullable Throwable failure) {

	/**
	 * Why a run of an agent ended.
	 */
	public enum Reason {

		/**
		 * The leader revoked the assignment and the agent drained within the drain
		 * timeout.
		 */
		REVOKED,

		/**
		 * The leader revoked the assignment and the agent did not return within the drain
		 * timeout; it was interrupted and the daemon handed over regardless.
		 */
		DRAIN_TIMEOUT,

		/**
		 * The assignment was deleted, moved to another node or given a newer generation;
		 * the agent was stopped at once.
		 */
		TAKEN_OVER,

		/**
		 * This node could not heartbeat within the node expiry, so other nodes may take
		 * the daemon over.
		 */
		CONTACT_LOST,

		/**
		 * The database session that binds this node ended
		 * ({@code leader.lease.crash-takeover-groups} names the daemons group), so the
		 * leader may give the daemon to another node at once.
		 */
		SESSION_LOST,

		/**
		 * This node is shutting down and handed the daemon over.
		 */
		SHUTDOWN,

		/**
		 * The agent threw; it is called again after a back-off.
		 */
		FAILED,

		/**
		 * The agent returned although it was not cancelled; it is called again after a
		 * back-off.
		 */
		COMPLETED

	}

}
