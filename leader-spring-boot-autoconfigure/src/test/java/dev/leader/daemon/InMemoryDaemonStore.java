package dev.leader.daemon;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import dev.leader.FencingToken;
import org.jspecify.annotations.Nullable;

/**
 * A {@link DaemonStore} in memory, for unit tests of the coordinator's helpers: each
 * method is atomic under the store's monitor and a compare-and-set on the generation, as
 * the contract asks, and the leader's writes change nothing unless its token names the
 * current {@linkplain #leaseHeldBy holder and term}. The database clock stands still
 * unless {@linkplain #advance advanced}. It records the transitions it applied, in order.
 */
final class InMemoryDaemonStore implements DaemonStore, DaemonGuard {

	private final Map<String, Member> members = new TreeMap<>();

	private final Map<String, Assignment> assignments = new TreeMap<>();

	private final List<DaemonRequest> requests = new ArrayList<>();

	private final List<String> applied = new CopyOnWriteArrayList<>();

	private final AtomicInteger acknowledgementsToFail = new AtomicInteger();

	private final AtomicInteger repliesToLose = new AtomicInteger();

	private final AtomicReference<@Nullable Runnable> beforeAcknowledgement = new AtomicReference<>();

	private Instant now = Instant.parse("2030-01-01T00:00:00Z");

	private @Nullable String holder;

	private long term;

	synchronized InMemoryDaemonStore member(Member member) {
		this.members.put(member.id(), member);
		return this;
	}

	synchronized InMemoryDaemonStore assignment(String daemon, String node, AssignmentState state, long generation) {
		this.assignments.put(daemon, new Assignment(daemon, node, state, generation, this.term, this.now));
		return this;
	}

	synchronized InMemoryDaemonStore leaseHeldBy(String node, long term) {
		this.holder = node;
		this.term = term;
		return this;
	}

	synchronized void advance(Duration duration) {
		this.now = this.now.plus(duration);
	}

	synchronized Optional<Assignment> assignment(String daemon) {
		return Optional.ofNullable(this.assignments.get(daemon));
	}

	/**
	 * Makes the next acknowledgements throw, as a lost connection does.
	 * @param count how many
	 */
	void failAcknowledgements(int count) {
		this.acknowledgementsToFail.set(count);
	}

	/**
	 * Makes the next acknowledgements throw after they took effect, as a connection lost
	 * between the commit and the reply does.
	 * @param count how many
	 */
	void loseAcknowledgementReplies(int count) {
		this.repliesToLose.set(count);
	}

	/**
	 * Runs an action before the next acknowledgement takes effect.
	 * @param action the action
	 */
	void beforeAcknowledgement(Runnable action) {
		this.beforeAcknowledgement.set(action);
	}

	/**
	 * Returns the transitions applied so far, such as {@code assign d1 a 1}.
	 */
	List<String> applied() {
		return List.copyOf(this.applied);
	}

	@Override
	public synchronized DaemonSnapshot read(Duration nodeExpiry) {
		return new DaemonSnapshot(this.now, List.copyOf(this.members.values()), List.copyOf(this.assignments.values()),
				List.copyOf(this.requests));
	}

	@Override
	public synchronized long assign(FencingToken leader, String leaderNode, String daemon, String node,
			long deletedGeneration, @Nullable Instant requestedAt) {
		Assignment current = this.assignments.get(daemon);
		long generation = (current != null) ? current.generation() : 0;
		if (!holds(leader, leaderNode) || (current != null && current.isLive()) || generation != deletedGeneration) {
			return 0;
		}
		if (requestedAt != null) {
			this.requests.removeIf((request) -> request.kind() == DaemonRequest.Kind.MOVE
					&& request.daemon().equals(daemon) && request.requestedAt().equals(requestedAt));
		}
		put(daemon, node, AssignmentState.ASSIGNING, generation + 1, leader.term());
		this.applied.add("assign " + daemon + " " + node + " " + (generation + 1));
		return generation + 1;
	}

	@Override
	public synchronized boolean revoke(FencingToken leader, String leaderNode, String daemon, long generation) {
		Assignment current = this.assignments.get(daemon);
		if (!holds(leader, leaderNode) || !is(current, generation) || current.state() == AssignmentState.REVOKING
				|| !current.isLive()) {
			return false;
		}
		put(daemon, current.node(), AssignmentState.REVOKING, generation, leader.term());
		this.applied.add("revoke " + daemon + " " + current.node() + " " + generation);
		return true;
	}

	@Override
	public synchronized boolean reclaim(FencingToken leader, String leaderNode, String daemon, long generation,
			AssignmentState state) {
		Assignment current = this.assignments.get(daemon);
		if (!holds(leader, leaderNode) || !is(current, generation) || !current.isLive() || current.state() != state) {
			return false;
		}
		put(daemon, current.node(), AssignmentState.DELETED, generation, leader.term());
		this.applied.add("reclaim " + daemon + " " + current.node() + " " + generation);
		return true;
	}

	@Override
	public boolean acknowledge(String node, String daemon, long generation) {
		Runnable before = this.beforeAcknowledgement.getAndSet(null);
		if (before != null) {
			before.run();
		}
		if (this.acknowledgementsToFail.getAndUpdate((count) -> Math.max(0, count - 1)) > 0) {
			throw new IllegalStateException("connection lost under the acknowledgement");
		}
		synchronized (this) {
			Assignment current = this.assignments.get(daemon);
			if (!is(current, generation) || !current.node().equals(node)
					|| current.state() != AssignmentState.ASSIGNING) {
				return false;
			}
			put(daemon, node, AssignmentState.ACTIVE, generation, current.term());
			this.applied.add("acknowledge " + daemon + " " + node + " " + generation);
			if (this.repliesToLose.getAndUpdate((count) -> Math.max(0, count - 1)) > 0) {
				throw new IllegalStateException("connection lost after the acknowledgement committed");
			}
			return true;
		}
	}

	@Override
	public synchronized boolean release(String node, String daemon, long generation) {
		Assignment current = this.assignments.get(daemon);
		if (!is(current, generation) || !current.node().equals(node) || !current.isLive()) {
			return false;
		}
		put(daemon, node, AssignmentState.DELETED, generation, current.term());
		this.applied.add("release " + daemon + " " + node + " " + generation);
		return true;
	}

	@Override
	public synchronized DaemonRequest request(DaemonRequest.Kind kind, String daemon, @Nullable String node) {
		this.requests.removeIf((request) -> request.kind() == kind && request.daemon().equals(daemon));
		DaemonRequest request = new DaemonRequest(kind, daemon, node, this.now);
		this.requests.add(request);
		return request;
	}

	@Override
	public synchronized boolean drain(String node, boolean drained) {
		Member member = this.members.get(node);
		if (member == null) {
			return false;
		}
		this.members.put(node, new Member(node, member.daemons(), member.alive(), drained));
		this.applied.add((drained ? "drain " : "undrain ") + node);
		return true;
	}

	@Override
	public synchronized boolean forget(FencingToken leader, String leaderNode, DaemonRequest request) {
		return holds(leader, leaderNode) && this.requests.remove(request);
	}

	@Override
	public synchronized @Nullable Assignment lock(String daemon) {
		return this.assignments.get(daemon);
	}

	private boolean holds(FencingToken leader, String leaderNode) {
		return leaderNode.equals(this.holder) && leader.term() == this.term;
	}

	private static boolean is(@Nullable Assignment assignment, long generation) {
		return assignment != null && assignment.generation() == generation;
	}

	private void put(String daemon, String node, AssignmentState state, long generation, long term) {
		this.assignments.put(daemon, new Assignment(daemon, node, state, generation, term, this.now));
	}

}
