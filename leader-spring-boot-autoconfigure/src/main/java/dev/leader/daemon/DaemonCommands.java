package dev.leader.daemon;

import java.util.List;
import java.util.NoSuchElementException;

import org.jspecify.annotations.Nullable;

/**
 * The operator's commands to daemon assignment, for the actuator endpoint. Each may be
 * called on any node: it records a request in the database, which the leader of the
 * daemons group carries out at its next cycle.
 */
public interface DaemonCommands {

	/**
	 * Asks the leader to rebalance at its next cycle with nothing in flight, without
	 * waiting for the settle window.
	 * @return the request as recorded
	 */
	DaemonRequest requestRebalance();

	/**
	 * Asks the leader to move a daemon: it revokes the daemon and, once drained, assigns
	 * it to the given node, or to the least-loaded other node that can run it. A daemon
	 * that runs nowhere now is assigned accordingly when it is next assigned.
	 * @param daemon the daemon
	 * @param node the node to move it to, or {@code null} for the least-loaded other node
	 * @return the request as recorded
	 * @throws NoSuchElementException if no node advertises the daemon and it was never
	 * assigned
	 * @throws IllegalArgumentException if the node is unknown, dead, drained or lacks the
	 * daemon, or if no other node can run the daemon; nothing is recorded then
	 */
	DaemonRequest requestMove(String daemon, @Nullable String node);

	/**
	 * Drains a node, or undrains it. The leader gives a drained node no daemons and moves
	 * each of its daemons that another node can run away from it, without waiting for the
	 * settle window and regardless of the move cap. The node stays drained until it is
	 * undrained or its node id starts again: in another process, or in this one once its
	 * engine was stopped and started.
	 * @param node the node
	 * @param drained whether to drain it
	 * @return the daemons assigned to the node as last read
	 * @throws NoSuchElementException if the coordinator does not know the node
	 */
	List<String> drain(String node, boolean drained);

}
