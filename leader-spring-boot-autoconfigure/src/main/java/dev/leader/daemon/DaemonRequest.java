package dev.leader.daemon;

import java.time.Instant;

import org.jspecify.annotations.Nullable;

/**
 * An operator's request that the leader of the daemons group carries out on its next
 * cycle, recorded by whichever node received it. The leader deletes it, under its lease
 * term, once it has acted on it.
 *
 * @param kind what is asked
 * @param daemon the daemon to move, or the empty string for {@link Kind#REBALANCE}
 * @param node the node to move the daemon to, or {@code null} for the least-loaded other
 * node
 * @param requestedAt when it was recorded, in database time; a newer request for the same
 * daemon replaces it
 */
public record DaemonRequest(Kind kind, String daemon, @Nullable String node, Instant requestedAt) {

	/**
	 * What a request asks for.
	 */
	public enum Kind {

		/**
		 * Rebalance now, without waiting for the settle window.
		 */
		REBALANCE,

		/**
		 * Move one daemon to another node.
		 */
		MOVE

	}

}
