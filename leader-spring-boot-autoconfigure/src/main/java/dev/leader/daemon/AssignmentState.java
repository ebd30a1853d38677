package dev.leader.daemon;

/**
 * The states of an assignment, in the order an assignment goes through them.
 */
public enum AssignmentState {

	/**
	 * The leader assigned the daemon to a node and waits for the node to acknowledge.
	 */
	ASSIGNING,

	/**
	 * The node acknowledged; the daemon runs there.
	 */
	ACTIVE,

	/**
	 * The leader asked the node to stop the daemon and waits for it to drain.
	 */
	REVOKING,

	/**
	 * The daemon runs nowhere and may be assigned again, with the next generation.
	 */
	DELETED

}
