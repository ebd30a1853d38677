package dev.leader.daemon;

import java.time.Instant;

/**
 * A daemon's assignment as read from the coordinator. Times are database time.
 *
 * @param daemon the daemon
 * @param node the node it is, or was last, assigned to
 * @param state the state
 * @param generation the generation, rising with every assignment of the daemon
 * @param term the term of the leader that last wrote it
 * @param since when it entered its state
 */
public record Assignment(String daemon, String node, AssignmentState state, long generation, long term, Instant since) {

	/**
	 * Returns whether the daemon is assigned, that is not
	 * {@link AssignmentState#DELETED}.
	 * @return whether it is live
	 */
	public boolean isLive() {
		return this.state != AssignmentState.DELETED;
	}

}
