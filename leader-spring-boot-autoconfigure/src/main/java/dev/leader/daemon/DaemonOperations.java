package dev.leader.daemon;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * What an operator can ask of daemon assignment from any node, and what they can see is
 * stuck. The requests check their input against a fresh read, record the request in the
 * store and return; the leader carries it out in its next cycle, under its term.
 * Thread-safe: each call is one or two store statements, on the calling thread.
 */
final class DaemonOperations {

	// The coordinator's category, which operators' logging configuration and alerts
	// already name.
	private static final Log logger = LogFactory.getLog(DaemonCoordinator.class);

	private final LocalNode node;

	private final String nodeId;

	private final DaemonStore store;

	private final DaemonSettings settings;

	DaemonOperations(LocalNode node, DaemonStore store, DaemonSettings settings) {
		this.node = node;
		this.nodeId = node.id();
		this.store = store;
		this.settings = settings;
	}

	/**
	 * See {@link DaemonCoordinator#requestRebalance()}.
	 * @return the request as recorded
	 */
	DaemonRequest requestRebalance() {
		DaemonRequest request = this.store.request(DaemonRequest.Kind.REBALANCE, "", null);
		logger.info(String.format("Daemon node=%s action=rebalance-requested", this.nodeId));
		return request;
	}

	/**
	 * See {@link DaemonCoordinator#requestMove(String, String)}.
	 * @param daemon the daemon
	 * @param node the node to move it to, or {@code null} for the least-loaded other node
	 * @return the request as recorded
	 */
	DaemonRequest requestMove(String daemon, @Nullable String node) {
		DaemonSnapshot snapshot = this.store.read(this.node.lease().nodeExpiry());
		boolean known = snapshot.assignment(daemon).isPresent()
				|| snapshot.members().stream().anyMatch((member) -> member.daemons().contains(daemon));
		if (!known) {
			throw new NoSuchElementException(
					"Unknown daemon '" + daemon + "': no node advertises it and it was never assigned");
		}
		if (node != null) {
			Member target = snapshot.member(node)
				.orElseThrow(() -> new IllegalArgumentException("Unknown node '" + node + "'"));
			String problem = !target.alive() ? "is dead" : target.drained() ? "is drained"
					: !target.daemons().contains(daemon) ? "does not have daemon '" + daemon + "'" : null;
			if (problem != null) {
				throw new IllegalArgumentException(
						"Cannot move '" + daemon + "' to node '" + node + "': it " + problem);
			}
		}
		else {
			String current = snapshot.assignment(daemon).filter(Assignment::isLive).map(Assignment::node).orElse(null);
			boolean elsewhere = snapshot.members()
				.stream()
				.anyMatch((member) -> member.takesDaemons() && member.daemons().contains(daemon)
						&& !member.id().equals(current));
			if (!elsewhere) {
				throw new IllegalArgumentException(
						"Cannot move '" + daemon + "': no other live, undrained node has it");
			}
		}
		DaemonRequest request = this.store.request(DaemonRequest.Kind.MOVE, daemon, node);
		logger.info(String.format("Daemon daemon=%s node=%s action=move-requested to=%s", daemon, this.nodeId,
				(node != null) ? node : "any"));
		return request;
	}

	/**
	 * See {@link DaemonCoordinator#drain(String, boolean)}.
	 * @param node the node
	 * @param drained whether to drain it
	 * @return the daemons assigned to the node as last read
	 */
	List<String> drain(String node, boolean drained) {
		if (!this.store.drain(node, drained)) {
			throw new NoSuchElementException("Unknown node '" + node + "'");
		}
		logger.info(
				String.format("Daemon node=%s action=%s by=%s", node, drained ? "drained" : "undrained", this.nodeId));
		return this.store.read(this.node.lease().nodeExpiry())
			.assignments()
			.stream()
			.filter((assignment) -> assignment.isLive() && assignment.node().equals(node))
			.map(Assignment::daemon)
			.sorted()
			.toList();
	}

	/**
	 * See {@link DaemonStatus#stuck()}.
	 * @param read the snapshot this node read last, or {@code null} before its first read
	 * @return why each daemon is stuck, by daemon name
	 */
	Map<String, String> stuck(@Nullable DaemonSnapshot read) {
		Map<String, String> stuck = new TreeMap<>();
		if (read == null || !this.node.leads()) {
			return stuck;
		}
		Set<String> advertised = new TreeSet<>();
		read.members().forEach((member) -> advertised.addAll(member.daemons()));
		long ackTimeout = this.settings.ackTimeout().toMillis();
		long drainTimeout = this.settings.drainTimeout().toMillis();
		for (Assignment assignment : read.assignments()) {
			long age = Duration.between(assignment.since(), read.now()).toMillis();
			if (assignment.state() == AssignmentState.ASSIGNING && age >= ackTimeout) {
				stuck.put(assignment.daemon(), String.format("ASSIGNING on %s for %d ms, past the ack timeout of %d ms",
						assignment.node(), age, ackTimeout));
			}
			else if (assignment.state() == AssignmentState.REVOKING && age >= drainTimeout) {
				stuck.put(assignment.daemon(),
						String.format("REVOKING on %s for %d ms, past the drain timeout of %d " + "ms",
								assignment.node(), age, drainTimeout));
			}
			else if (!assignment.isLive() && advertised.contains(assignment.daemon())
					&& age >= this.node.pollInterval().toMillis()) {
				stuck.put(assignment.daemon(),
						String.format("unassigned for %d ms: no live, undrained node that " + "has it", age));
			}
		}
		for (String daemon : advertised) {
			if (read.assignment(daemon).isEmpty()) {
				stuck.put(daemon, "unassigned: no live, undrained node that has it");
			}
		}
		return stuck;
	}

}
