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
 * The leader's decisions for one cycle, as a pure function of what it read: no I/O, no
 * clock but the database's, and the same actions for the same input. The actions are
 * meant to be applied in order, each as a compare-and-set on the generation it names, so
 * an action based on an outdated read changes nothing.
 * <ol>
 * <li><b>Reclaim</b> live assignments on dead nodes, ASSIGNING past the acknowledge
 * timeout and REVOKING past the drain timeout plus one poll interval (a responsive node
 * hands a revoked daemon back by itself at its drain timeout, at the latest on its next
 * poll; this reclaim is for nodes that do not). A daemon reclaimed for a timeout is not
 * given back to the same node in the same cycle.</li>
 * <li><b>Assign</b> every daemon that some live node advertises and that has no live
 * assignment, in name order, to the least-loaded live node that advertises it; ties go to
 * the lowest node id. A node's load is its ASSIGNING and ACTIVE assignments.</li>
 * <li><b>Rebalance</b>, only when nothing is in flight (no ASSIGNING or REVOKING, nothing
 * assigned this cycle) and the live nodes have not changed for the settle window: while
 * loads differ by more than one, revoke an ACTIVE daemon of the most-loaded node that a
 * less-loaded node can run, at most the move cap per cycle. It is reassigned once its
 * node has drained it.</li>
 * </ol>
 * Operators steer it through {@link DaemonRequest}s and drained nodes. A drained node
 * gets nothing, and each of its daemons that another node can run is revoked toward the
 * least-loaded such node, ignoring the settle window and the move cap. A move request
 * revokes the daemon toward the requested node, or the least-loaded other node when none
 * was named or the named one no longer takes daemons, and the reassignment that follows
 * deletes the request; a request that cannot be carried out (no other node can run the
 * daemon) is deleted. A rebalance request lifts the settle window once, at the first
 * cycle with nothing in flight. Drained nodes neither give nor take in a rebalance.
 */
final class AssignmentPlanner {

	private static final Comparator<String> BY_NAME = Comparator.naturalOrder();

	private AssignmentPlanner() {
	}

	/**
	 * Plans one cycle.
	 * @param snapshot the nodes and assignments, with the database's clock
	 * @param membershipChangedAt when the leader last saw the set of live nodes change,
	 * in database time
	 * @param settings the settings
	 * @param pollInterval how often every node polls its assignments
	 * @return the actions, to apply in order
	 */
	static List<Action> plan(DaemonSnapshot snapshot, Instant membershipChangedAt, DaemonSettings settings,
			Duration pollInterval) {
		Instant now = snapshot.now();
		Map<String, Member> live = new TreeMap<>();
		snapshot.members().stream().filter(Member::alive).forEach((member) -> live.put(member.id(), member));
		Map<String, Member> takers = new TreeMap<>();
		live.values().stream().filter(Member::takesDaemons).forEach((member) -> takers.put(member.id(), member));
		Set<String> known = new TreeSet<>();
		live.values().forEach((member) -> known.addAll(member.daemons()));
		Map<String, Integer> load = new HashMap<>();
		takers.keySet().forEach((node) -> load.put(node, 0));
		Map<String, DaemonRequest> moves = new HashMap<>();
		DaemonRequest rebalance = null;
		for (DaemonRequest request : snapshot.requests()) {
			if (request.kind() == DaemonRequest.Kind.REBALANCE) {
				rebalance = request;
			}
			else {
				moves.put(request.daemon(), request);
			}
		}
		List<Action> actions = new ArrayList<>();
		Map<String, Long> unassigned = new TreeMap<>();
		Map<String, String> excluded = new HashMap<>();
		Map<String, String> previous = new HashMap<>();
		List<Assignment> placed = new ArrayList<>();
		Set<String> seen = new HashSet<>();
		boolean inFlight = false;
		List<Assignment> assignments = new ArrayList<>(snapshot.assignments());
		assignments.sort(Comparator.comparing(Assignment::daemon));
		for (Assignment assignment : assignments) {
			String daemon = assignment.daemon();
			seen.add(daemon);
			previous.put(daemon, assignment.node());
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
					&& age.compareTo(settings.drainTimeout().plus(pollInterval)) >= 0) {
				cause = ReclaimCause.DRAIN_TIMEOUT;
			}
			if (cause != null) {
				actions.add(new Reclaim(daemon, assignment.node(), assignment.generation(), assignment.state(), cause));
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
			placed.add(assignment);
			load.computeIfPresent(assignment.node(), (node, count) -> count + 1);
		}
		Map<String, List<Assignment>> active = new HashMap<>();
		for (Assignment assignment : placed) {
			String daemon = assignment.daemon();
			String node = assignment.node();
			DaemonRequest move = moves.get(daemon);
			MoveCause moveCause = live.get(node).drained() ? MoveCause.DRAINED
					: (move != null && !node.equals(move.node())) ? MoveCause.REQUESTED : null;
			if (move != null && node.equals(move.node())) {
				actions.add(new Forget(move));
			}
			if (moveCause != null) {
				String toward = target(daemon, takers, load, node, (move != null) ? move.node() : null);
				if (toward != null && toward.equals(node)) {
					toward = null;
				}
				if (toward != null) {
					actions.add(new Revoke(daemon, node, assignment.generation(), toward, moveCause));
					load.computeIfPresent(node, (key, count) -> count - 1);
					load.merge(toward, 1, Integer::sum);
					inFlight = true;
					continue;
				}
				if (moveCause == MoveCause.REQUESTED) {
					// Nowhere else to run it: the request cannot be carried out.
					actions.add(new Forget(move));
				}
			}
			if (assignment.state() == AssignmentState.ASSIGNING) {
				inFlight = true;
			}
			else if (takers.containsKey(node)) {
				active.computeIfAbsent(node, (key) -> new ArrayList<>()).add(assignment);
			}
		}
		for (String daemon : known) {
			if (!seen.contains(daemon)) {
				unassigned.put(daemon, 0L);
			}
		}
		for (Map.Entry<String, Long> entry : unassigned.entrySet()) {
			String daemon = entry.getKey();
			DaemonRequest move = moves.get(daemon);
			String target = null;
			if (move != null) {
				target = target(daemon, takers, load, previous.get(daemon), move.node());
			}
			if (target == null || target.equals(excluded.get(daemon))) {
				target = target(daemon, takers, load, excluded.get(daemon), null);
			}
			if (target != null) {
				actions.add(new Assign(daemon, target, entry.getValue(), (move != null) ? move.requestedAt() : null));
				load.merge(target, 1, Integer::sum);
				inFlight = true;
			}
			else if (move != null && !known.contains(daemon)) {
				actions.add(new Forget(move));
			}
		}
		for (DaemonRequest move : moves.values()) {
			if (!seen.contains(move.daemon()) && !known.contains(move.daemon())) {
				actions.add(new Forget(move));
			}
		}
		boolean settled = Duration.between(membershipChangedAt, now).compareTo(settings.settleWindow()) >= 0;
		if (!inFlight && (settled || rebalance != null)) {
			rebalance(takers, load, active, settings.maxMovesPerCycle(), actions);
			if (rebalance != null) {
				actions.add(new Forget(rebalance));
			}
		}
		return actions;
	}

	/**
	 * Chooses where a daemon goes: the requested node if it takes daemons and advertises
	 * this one, otherwise (the node may have died or been drained since) the least-loaded
	 * such node other than the one to avoid, ties to the lowest node id.
	 * @param daemon the daemon
	 * @param takers the live nodes that take daemons, by id
	 * @param load the number of daemons of each node, by id
	 * @param avoid a node not to choose, or {@code null}
	 * @param requested the node that a move request names, or {@code null}
	 * @return the node, or {@code null} if no node other than the one to avoid has the
	 * daemon
	 */
	private static @Nullable String target(String daemon, Map<String, Member> takers, Map<String, Integer> load,
			@Nullable String avoid, @Nullable String requested) {
		Member wanted = (requested != null) ? takers.get(requested) : null;
		if (wanted != null && wanted.daemons().contains(daemon)) {
			return requested;
		}
		return takers.values()
			.stream()
			.filter((member) -> member.daemons().contains(daemon) && !member.id().equals(avoid))
			.map(Member::id)
			.min(Comparator.comparing((String node) -> load.get(node)).thenComparing(BY_NAME))
			.orElse(null);
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
	public sealed interface Action permits Reclaim, Assign, Revoke, Forget {

		/**
		 * Returns the daemon the action is about.
		 * @return the daemon
		 */
		String daemon();

	}

	/**
	 * Delete a live assignment without waiting for its node, if it is still in the state
	 * read: an acknowledgement since the read makes a reclaim for the ack timeout change
	 * nothing.
	 *
	 * @param daemon the daemon
	 * @param node the node it was assigned to
	 * @param generation the generation to delete
	 * @param state the state it was read in
	 * @param cause why
	 */
	public record Reclaim(String daemon, String node, long generation, AssignmentState state,
			ReclaimCause cause) implements Action {
	}

	/**
	 * Assign a daemon with no live assignment.
	 *
	 * @param daemon the daemon
	 * @param node the node to run it
	 * @param deletedGeneration the generation of its DELETED assignment, 0 if it was
	 * never assigned
	 * @param requestedAt when the move request this assignment carries out was recorded,
	 * or {@code null}; the store deletes that request with the assignment
	 */
	public record Assign(String daemon, String node, long deletedGeneration,
			@Nullable Instant requestedAt) implements Action {

		/**
		 * Assign a daemon that no move request names.
		 * @param daemon the daemon
		 * @param node the node to run it
		 * @param deletedGeneration the generation of its DELETED assignment, 0 if it was
		 * never assigned
		 */
		Assign(String daemon, String node, long deletedGeneration) {
			this(daemon, node, deletedGeneration, null);
		}

	}

	/**
	 * Revoke an ACTIVE assignment to move the daemon toward a less-loaded node.
	 *
	 * @param daemon the daemon
	 * @param node the node it runs on
	 * @param generation the generation to revoke
	 * @param toward the node expected to receive it once drained
	 * @param cause why it moves
	 */
	public record Revoke(String daemon, String node, long generation, String toward,
			MoveCause cause) implements Action {

		/**
		 * Revoke an ACTIVE assignment to rebalance.
		 * @param daemon the daemon
		 * @param node the node it runs on
		 * @param generation the generation to revoke
		 * @param toward the node expected to receive it once drained
		 */
		Revoke(String daemon, String node, long generation, String toward) {
			this(daemon, node, generation, toward, MoveCause.REBALANCE);
		}

	}

	/**
	 * Delete an operator's request that has been carried out or cannot be.
	 *
	 * @param request the request, as read
	 */
	public record Forget(DaemonRequest request) implements Action {

		@Override
		public String daemon() {
			return this.request.daemon();
		}

	}

	/**
	 * Why the leader revokes a daemon that runs well.
	 */
	public enum MoveCause {

		/**
		 * Loads differ by more than one.
		 */
		REBALANCE,

		/**
		 * An operator asked to move it.
		 */
		REQUESTED,

		/**
		 * An operator drained its node.
		 */
		DRAINED

	}

}
