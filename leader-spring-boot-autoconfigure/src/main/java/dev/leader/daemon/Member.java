package dev.leader.daemon;

import java.util.Set;

/**
 * A node as the assignment planner sees it.
 *
 * @param id the node id
 * @param daemons the daemons it advertises
 * @param alive whether its last heartbeat is within the node expiry, in database time
 * @param drained whether an operator drained it: it gets no daemons, and the ones it has
 * move away
 */
public record Member(String id, Set<String> daemons, boolean alive, boolean drained) {

	/**
	 * Creates a member.
	 * @param id the node id
	 * @param daemons the daemons it advertises
	 * @param alive whether it is alive
	 * @param drained whether it is drained
	 */
	public Member {
		daemons = Set.copyOf(daemons);
	}

	/**
	 * Creates a member that is not drained.
	 * @param id the node id
	 * @param daemons the daemons it advertises
	 * @param alive whether it is alive
	 */
	public Member(String id, Set<String> daemons, boolean alive) {
		this(id, daemons, alive, false);
	}

	/**
	 * Returns whether the leader may give this node daemons: alive and not drained.
	 * @return whether it takes daemons
	 */
	public boolean takesDaemons() {
		return this.alive && !this.drained;
	}

}
