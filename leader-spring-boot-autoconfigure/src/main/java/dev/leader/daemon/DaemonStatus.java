package dev.leader.daemon;

import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A read-only view of daemon assignment on this node, for endpoints, health indicators
 * and metrics. Every method may be called from any thread, returns at once without a
 * statement of its own, and reflects what this node last read or did: the assignments lag
 * the database by up to one cycle (a renew interval).
 */
public interface DaemonStatus {

	/**
	 * Returns the assignments as this node last read them.
	 * @return the assignments, deleted ones included, by daemon name; empty before the
	 * first read
	 */
	List<Assignment> assignments();

	/**
	 * Returns the daemons this node can run.
	 * @return the daemon names
	 */
	Set<String> daemons();

	/**
	 * Returns the daemons running on this node, with their generations.
	 * @return the generations, by daemon name
	 */
	Map<String, Long> running();

	/**
	 * Returns how many daemons the leader took away from a node while this node led, by
	 * cause in lower case: {@code rebalance}, {@code requested}, {@code drained} (revoked
	 * from a running node), {@code node_dead}, {@code ack_timeout}, {@code drain_timeout}
	 * (reclaimed without waiting for the node).
	 * @return the counts, by cause; a cause that never happened is absent
	 */
	Map<String, Long> moves();

	/**
	 * Returns the daemons that, as this node last read them, have stayed unassigned or
	 * stuck past their timeouts, while this node leads the daemons group: with no live
	 * assignment although some node (alive, or dead and not yet forgotten) advertises
	 * them, ASSIGNING past the acknowledge timeout, or REVOKING past the drain timeout.
	 * Empty on the other nodes. A daemon handed back counts as unassigned only once it
	 * has been so for a renew interval, the time the leader takes to reassign it.
	 * @return why each daemon is stuck, by daemon name
	 */
	Map<String, String> stuck();

	/**
	 * Returns the settings.
	 * @return the settings
	 */
	DaemonSettings settings();

	/**
	 * Returns the causes that {@link #moves()} counts.
	 * @return the causes, in lower case
	 */
	static List<String> moveCauses() {
		return LeaderCycle.moveCauses();
	}

}
