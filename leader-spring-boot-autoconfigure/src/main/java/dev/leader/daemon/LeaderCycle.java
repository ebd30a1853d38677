package dev.leader.daemon;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;

import dev.leader.FencingToken;
import dev.leader.daemon.AssignmentPlanner.Action;
import dev.leader.daemon.AssignmentPlanner.Assign;
import dev.leader.daemon.AssignmentPlanner.Forget;
import dev.leader.daemon.AssignmentPlanner.MoveCause;
import dev.leader.daemon.AssignmentPlanner.Reclaim;
import dev.leader.daemon.AssignmentPlanner.ReclaimCause;
import dev.leader.daemon.AssignmentPlanner.Revoke;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * The leader's side of a cycle: plans with {@link AssignmentPlanner} and applies the
 * actions in order, each a write guarded by the leader's {@link FencingToken}, so that a
 * deposed leader changes nothing (G3). It stops applying as soon as this node no longer
 * {@linkplain LocalNode#leads() leads}. It remembers when the live nodes last changed
 * under its term, from which the planner counts the settle window, and counts the daemons
 * it took away from a node by cause. {@link #lead} and {@link #notLeading()} run on the
 * {@code leader-daemons} thread, {@link #moves()} on any thread.
 */
final class LeaderCycle {

	// The coordinator's category, which operators' logging configuration and alerts
	// already name.
	private static final Log logger = LogFactory.getLog(DaemonCoordinator.class);

	private final LocalNode node;

	private final String nodeId;

	private final DaemonStore store;

	private final DaemonSettings settings;

	private final Map<String, AtomicLong> moves = new ConcurrentHashMap<>();

	// On the leader-daemons thread only.

	private long ledTerm;

	private @Nullable Set<Member> liveMembers;

	private @Nullable Instant membershipChangedAt;

	LeaderCycle(LocalNode node, DaemonStore store, DaemonSettings settings) {
		this.node = node;
		this.nodeId = node.id();
		this.store = store;
		this.settings = settings;
	}

	/**
	 * Returns the causes that {@link #moves()} counts.
	 * @return the causes, in lower case
	 */
	static List<String> moveCauses() {
		List<String> causes = new ArrayList<>();
		for (MoveCause cause : MoveCause.values()) {
			causes.add(cause.name().toLowerCase(Locale.ROOT));
		}
		for (ReclaimCause cause : ReclaimCause.values()) {
			causes.add(cause.name().toLowerCase(Locale.ROOT));
		}
		return causes;
	}

	/**
	 * Returns how many daemons the leader took away from a node while this node led, by
	 * cause in lower case.
	 * @return the counts, by cause
	 */
	Map<String, Long> moves() {
		Map<String, Long> counts = new TreeMap<>();
		this.moves.forEach((cause, count) -> counts.put(cause, count.get()));
		return counts;
	}

	/**
	 * Plans on a snapshot and applies the plan under a token.
	 * @param snapshot the nodes and assignments, read in this cycle
	 * @param token the token of the daemons group, held when the cycle started
	 * @return whether any action changed an assignment or request, so that the snapshot
	 * is outdated
	 */
	boolean lead(DaemonSnapshot snapshot, FencingToken token) {
		Set<Member> live = snapshot.members().stream().filter(Member::alive).collect(Collectors.toSet());
		if (token.term() != this.ledTerm || !live.equals(this.liveMembers) || this.membershipChangedAt == null) {
			this.ledTerm = token.term();
			this.liveMembers = live;
			this.membershipChangedAt = snapshot.now();
		}
		List<Action> plan = AssignmentPlanner.plan(snapshot, this.membershipChangedAt, this.settings,
				this.node.pollInterval());
		boolean changed = false;
		for (Action action : plan) {
			if (!this.node.leads()) {
				return changed;
			}
			changed |= apply(action, token);
		}
		return changed;
	}

	/**
	 * Notes a cycle in which this node did not lead: the settle window starts again with
	 * its next term.
	 */
	void notLeading() {
		this.ledTerm = 0;
	}

	private boolean apply(Action action, FencingToken token) {
		long started = System.nanoTime();
		boolean applied;
		String detail;
		String moved = null;
		if (action instanceof Reclaim reclaim) {
			applied = this.store.reclaim(token, this.nodeId, reclaim.daemon(), reclaim.generation(), reclaim.state());
			detail = String.format("action=reclaimed from=%s generation=%d cause=%s", reclaim.node(),
					reclaim.generation(), reclaim.cause());
			moved = reclaim.cause().name();
		}
		else if (action instanceof Assign assign) {
			long generation = this.store.assign(token, this.nodeId, assign.daemon(), assign.node(),
					assign.deletedGeneration(), assign.requestedAt());
			applied = generation > 0;
			detail = String.format("action=assigned to=%s generation=%d%s", assign.node(), generation,
					(assign.requestedAt() != null) ? " requested=true" : "");
		}
		else if (action instanceof Forget forget) {
			applied = this.store.forget(token, this.nodeId, forget.request());
			detail = String.format("action=request-done kind=%s to=%s", forget.request().kind(),
					forget.request().node());
		}
		else {
			Revoke revoke = (Revoke) action;
			applied = this.store.revoke(token, this.nodeId, revoke.daemon(), revoke.generation());
			detail = String.format("action=revoked from=%s generation=%d toward=%s cause=%s", revoke.node(),
					revoke.generation(), revoke.toward(), revoke.cause());
			moved = revoke.cause().name();
		}
		if (applied && moved != null) {
			this.moves.computeIfAbsent(moved.toLowerCase(Locale.ROOT), (cause) -> new AtomicLong()).incrementAndGet();
		}
		long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
		if (applied) {
			logger.info(String.format("Daemon daemon=%s leader=%s term=%d %s latency=%dms", action.daemon(),
					this.nodeId, token.term(), detail, millis));
		}
		else {
			logger.debug(String.format(
					"Daemon daemon=%s leader=%s term=%d not applied (outdated read or lease " + "lost): %s",
					action.daemon(), this.nodeId, token.term(), detail));
		}
		return applied;
	}

}
