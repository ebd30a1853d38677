package dev.leader.daemon;

import java.util.Set;

/**
 * A node as the assignment planner sees it.
 *
 * @param id the node id
 * @param daemons the daemons it advertises
 * @param alive whether its last heartbeat is within the node expiry, in database time
 */
public record Member(String id, Set<String> daemons, boolean alive) {

	/**
	 * Creates a member.
	 * @param id the node id
	 * @param daemons the daemons it advertises
	 * @param alive whether it is alive
	 */
	public Member {
		daemons = Set.copyOf(daemons);
	}

}
