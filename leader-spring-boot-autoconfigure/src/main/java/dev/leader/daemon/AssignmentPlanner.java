package dev.leader.daemon;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.jspecify.annotations.Nullable;

/**
 * The leader's decisions for one cycle, as a pure function of what it read: no I/O, no clock but the database's, and
 * the same actions for the same input. The actions are meant to be applied in order, each as a compare-and-set on the
 * generation it names, so an action based on an outdated read changes nothing.
 * <ol>
 * <li><b>Reclaim</b> live assignments on dead nodes, ASSIGNING past the acknowledge timeout and REVOKING past the
 * drain timeout plus one cycle (a responsive node hands a revoked daemon back by itself at its drain timeout; this
 * reclaim is for nodes that do not). A daemon reclaimed for a timeout is not given back to the same node in the same
 * cycle.</li>
 * <li><b>Assign</b> every daemon that some live node advertises and that has no live assignment, in name order, to the
 * least-loaded live node that advertises it; ties go to the lowest node id. A node's load is its ASSIGNING and
 * ACTIVE assignments.</li>
 * <li><b>Rebalance</b>, only when nothing is in flight (no ASSIGNING or REVOKING, nothing assigned this cycle) and the
 * live nodes have not changed for the settle window: while loads differ by more than one, revoke an ACTIVE daemon
 * of the most-loaded node that a less-loaded node can run, at most the move cap per cycle. It is reassigned once
 * its node has drained it.</li>
 * </ol>
 */
public final class AssignmentPlanner {

	private static final Comparator<String> BY_NAME = Comparator.naturalOrder();

	private AssignmentPlanner() {
	}

	/**
	 * Plans one cycle.
	 * @param snapshot the nodes and assignments, with the database's clock
	 * @param membershipChangedAt when the leader last saw the set of live nodes change, in database time
	 * @param settings the settings
	 * @return the actions, to apply in order
	 */
	public static List<Action> plan(DaemonSnapshot snapshot, Instant membershipChangedAt, DaemonSettings settings) {
		Instant now = snapshot.now();
		Map<String, Member> live = new TreeMap<>();
		snapshot.members().stream().filter(Member::alive).forEach((member) -> live.put(member.id(), member));
		Set<String> known = new TreeSet<>();
		live.values().forEach((member) -> known.addAll(member.daemons()));
		Map<String, Integer> load = new HashMap<>();
		live.keySet().forEach((node) -> load.put(node, 0));
		List<Action> actions = new ArrayList<>();
		Map<String, Long> unassigned = new TreeMap<>();
		Map<String, String> excluded = new HashMap<>();
		Map<String, List<Assignment>> active = new HashMap<>();
		Set<String> seen = new HashSet<>();
		boolean inFlight = false;
		List<Assignment> assignments = new ArrayList<>(snapshot.assignments());
		assignments.sort(Comparator.comparing(Assignment::daemon));
		for (Assignment assignment : assignments) {
			String daemon = assignment.daemon();
			seen.add(daemon);
			Duration age = Duration.between(assignment.since(), now);
			ReclaimCause cause = null;
			if (!assignment.isLive()) {
				unassigned.put(daemon, assignment.generation());
				continue;
			}
			if (!live.containsKey(assignment.node())) {
				cause = ReclaimCause.NODE_DEAD;
			}
			else if (assignment.state() == AssignmentState.ASSIGNING && age.compareTo(settings.ackTimeout()) >= 0) {
				cause = ReclaimCause.ACK_TIMEOUT;
			}
			else if (assignment.state() == AssignmentState.REVOKING
					&& age.compareTo(settings.drainTimeout().plus(settings.cycleInterval())) >= 0) {
				cause = ReclaimCause.DRAIN_TIMEOUT;
			}
			if (cause != null) {
				actions.add(new Reclaim(daemon, assignment.node(), assignment.generation(), cause));
				unassigned.put(daemon, assignment.generation());
				if (cause != ReclaimCause.NODE_DEAD) {
					excluded.put(daemon, assignment.node());
				}
				continue;
			}
			if (assignment.state() == AssignmentState.REVOKING) {
				inFlight = true;
				continue;
			}
			if (assignment.state() == AssignmentState.ASSIGNING) {
				inFlight = true;
			}
			else {
				active.computeIfAbsent(assignment.node(), (node) -> new ArrayList<>()).add(assignment);
			}
			load.merge(assignment.node(), 1, Integer::sum);
		}
		for (String daemon : known) {
			if (!seen.contains(daemon)) {
				unassigned.put(daemon, 0L);
			}
		}
		for (Map.Entry<String, Long> entry : unassigned.entrySet()) {
			String daemon = entry.getKey();
			String target = live.values()
				.stream()
				.filter((member) -> member.daemons().contains(daemon) && !member.id().equals(excluded.get(daemon)))
				.map(Member::id)
				.min(Comparator.comparing((String node) -> load.get(node)).thenComparing(BY_NAME))
				.orElse(null);
			if (target != null) {
				actions.add(new Assign(daemon, target, entry.getValue()));
				load.merge(target, 1, Integer::sum);
				inFlight = true;
			}
		}
		boolean settled = Duration.between(membershipChangedAt, now).compareTo(settings.settleWindow()) >= 0;
		if (!inFlight && settled) {
			rebalance(live, load, active, settings.maxMovesPerCycle(), actions);
		}
		return actions;
	}

	private static void rebalance(Map<String, Member> live, Map<String, Integer> load,
			Map<String, List<Assignment>> active, int maxMoves, List<Action> actions) {
		Comparator<String> byLoad = Comparator.comparing((String node) -> load.get(node)).thenComparing(BY_NAME);
		for (int moves = 0; moves < maxMoves; moves++) {
			Revoke move = nextMove(live, load, active, byLoad);
			if (move == null) {
				return;
			}
			actions.add(move);
			active.get(move.node()).removeIf((assignment) -> assignment.daemon().equals(move.daemon()));
			load.merge(move.node(), -1, Integer::sum);
			load.merge(move.toward(), 1, Integer::sum);
		}
	}

	private static @Nullable Revoke nextMove(Map<String, Member> live, Map<String, Integer> load,
			Map<String, List<Assignment>> active, Comparator<String> byLoad) {
		List<String> donors = new ArrayList<>(live.keySet());
		donors.sort(byLoad.reversed());
		List<String> recipients = new ArrayList<>(live.keySet());
		recipients.sort(byLoad);
		for (String donor : donors) {
			for (String recipient : recipients) {
				if (load.get(donor) - load.get(recipient) <= 1) {
					break;
				}
				Set<String> runnable = live.get(recipient).daemons();
				Assignment moved = active.getOrDefault(donor, List.of())
					.stream()
					.filter((assignment) -> runnable.contains(assignment.daemon()))
					.max(Comparator.comparing(Assignment::daemon))
					.orElse(null);
				if (moved != null) {
					return new Revoke(moved.daemon(), donor, moved.generation(), recipient);
				}
			}
		}
		return null;
	}

	/**
	 * Why the leader deletes an assignment without waiting for its node.
	 */
	public enum ReclaimCause {

		/**
		 * The node is dead: its heartbeat is older than the node expiry, or it left.
		 */
		NODE_DEAD,

		/**
		 * The node did not acknowledge within the acknowledge timeout.
		 */
		ACK_TIMEOUT,

		/**
		 * The node did not drain the revoked daemon within the drain timeout.
		 */
		DRAIN_TIMEOUT

	}

	/**
	 * One step of a plan.
	 */
	public sealed interface Action permits Reclaim, Assign, Revoke {

		/**
		 * Returns the daemon the action is about.
		 * @return the daemon
		 */
		String daemon();

	}

	/**
	 * Delete a live assignment without waiting for its node.
	 *
	 * @param daemon the daemon
	 * @param node the node it was assigned to
	 * @param generation the generation to delete
	 * @param cause why
	 */
	public record Reclaim(String daemon, String node, long generation, ReclaimCause cause) implements Action {
	}

	/**
	 * Assign a daemon with no live assignment.
	 *
	 * @param daemon the daemon
	 * @param node the node to run it
	 * @param deletedGeneration the generation of its DELETED assignment, 0 if it was never assigned
	 */
	public record Assign(String daemon, String node, long deletedGeneration) implements Action {
	}

	/**
	 * Revoke an ACTIVE assignment to move the daemon toward a less-loaded node.
	 *
	 * @param daemon the daemon
	 * @param node the node it runs on
	 * @param generation the generation to revoke
	 * @param toward the node expected to receive it once drained
	 */
	public record Revoke(String daemon, String node, long generation, String toward) implements Action {
	}

}
