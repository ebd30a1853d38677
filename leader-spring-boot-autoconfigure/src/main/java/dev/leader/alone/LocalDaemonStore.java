package dev.leader.alone;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Supplier;

import dev.leader.FencingToken;
import dev.leader.alone.LocalStores.Node;
import dev.leader.daemon.Assignment;
import dev.leader.daemon.AssignmentState;
import dev.leader.daemon.DaemonGuard;
import dev.leader.daemon.DaemonRequest;
import dev.leader.daemon.DaemonSnapshot;
import dev.leader.daemon.DaemonStore;
import dev.leader.daemon.Member;
import org.jspecify.annotations.Nullable;

/**
 * The daemon assignments of a node that runs alone: every transition a compare-and-set on
 * the generation, the leader's writes refused unless its token still holds the daemons'
 * group, as the database stores do. The members are the nodes of the coordination store.
 * A daemon's guard ({@link #lock}) holds the assignment until its transaction ends: the
 * transitions that end the assignment wait for it, a revoke and an acknowledgement do
 * not.
 */
final class LocalDaemonStore implements DaemonStore, DaemonGuard {

	private final LocalStores stores;

	private final Map<String, Assignment> assignments = new TreeMap<>();

	private final List<DaemonRequest> requests = new ArrayList<>();

	private final Map<String, ReentrantReadWriteLock> assignmentLocks = new ConcurrentHashMap<>();

	LocalDaemonStore(LocalStores stores) {
		this.stores = stores;
	}

	@Override
	public DaemonSnapshot read(Duration nodeExpiry) {
		return locked(() -> {
			Instant now = this.stores.now();
			List<Member> members = new ArrayList<>();
			for (Node node : this.stores.nodes.values()) {
				members.add(new Member(node.registration().id(), node.registration().daemons(),
						node.heartbeatAt().plus(nodeExpiry).isAfter(now), node.drained()));
			}
			return new DaemonSnapshot(now, members, List.copyOf(this.assignments.values()), List.copyOf(this.requests));
		});
	}

	@Override
	public long assign(FencingToken leader, String leaderNode, String daemon, String node, long deletedGeneration,
			@Nullable Instant requestedAt) {
		return ending(daemon, () -> locked(() -> {
			Instant now = this.stores.now();
			Assignment current = this.assignments.get(daemon);
			long generation = (current != null) ? current.generation() : 0;
			if (!this.stores.holds(leader, leaderNode, now) || (current != null && current.isLive())
					|| generation != deletedGeneration) {
				return 0L;
			}
			if (requestedAt != null) {
				this.requests.removeIf((request) -> request.kind() == DaemonRequest.Kind.MOVE
						&& request.daemon().equals(daemon) && request.requestedAt().equals(requestedAt));
			}
			put(daemon, node, AssignmentState.ASSIGNING, generation + 1, leader.term(), now);
			return generation + 1;
		}));
	}

	@Override
	public boolean revoke(FencingToken leader, String leaderNode, String daemon, long generation) {
		return locked(() -> {
			Instant now = this.stores.now();
			Assignment current = this.assignments.get(daemon);
			if (!this.stores.holds(leader, leaderNode, now) || !is(current, generation) || !current.isLive()
					|| current.state() == AssignmentState.REVOKING) {
				return false;
			}
			put(daemon, current.node(), AssignmentState.REVOKING, generation, leader.term(), now);
			return true;
		});
	}

	@Override
	public boolean reclaim(FencingToken leader, String leaderNode, String daemon, long generation,
			AssignmentState state) {
		return ending(daemon, () -> locked(() -> {
			Instant now = this.stores.now();
			Assignment current = this.assignments.get(daemon);
			if (!this.stores.holds(leader, leaderNode, now) || !is(current, generation) || !current.isLive()
					|| current.state() != state) {
				return false;
			}
			put(daemon, current.node(), AssignmentState.DELETED, generation, leader.term(), now);
			return true;
		}));
	}

	@Override
	public boolean acknowledge(String node, String daemon, long generation) {
		return locked(() -> {
			Assignment current = this.assignments.get(daemon);
			if (!is(current, generation) || !current.node().equals(node)
					|| current.state() != AssignmentState.ASSIGNING) {
				return false;
			}
			put(daemon, node, AssignmentState.ACTIVE, generation, current.term(), this.stores.now());
			return true;
		});
	}

	@Override
	public boolean release(String node, String daemon, long generation) {
		return ending(daemon, () -> locked(() -> {
			Assignment current = this.assignments.get(daemon);
			if (!is(current, generation) || !current.node().equals(node) || !current.isLive()) {
				return false;
			}
			put(daemon, node, AssignmentState.DELETED, generation, current.term(), this.stores.now());
			return true;
		}));
	}

	@Override
	public DaemonRequest request(DaemonRequest.Kind kind, String daemon, @Nullable String node) {
		return locked(() -> {
			this.requests.removeIf((request) -> request.kind() == kind && request.daemon().equals(daemon));
			DaemonRequest request = new DaemonRequest(kind, daemon, node, this.stores.now());
			this.requests.add(request);
			return request;
		});
	}

	@Override
	public boolean drain(String node, boolean drained) {
		return locked(() -> {
			Node member = this.stores.nodes.get(node);
			if (member == null) {
				return false;
			}
			this.stores.nodes.put(node, member.drained(drained));
			return true;
		});
	}

	@Override
	public boolean forget(FencingToken leader, String leaderNode, DaemonRequest request) {
		return locked(() -> this.stores.holds(leader, leaderNode, this.stores.now()) && this.requests.remove(request));
	}

	@Override
	public @Nullable Assignment lock(String daemon) {
		LocalStores.requireTransaction("A daemon's guard");
		Lock read = assignmentLock(daemon).readLock();
		this.stores.take(read, "daemon '" + daemon + "'");
		LocalStores.holdUntilCompletion(read, null);
		return locked(() -> this.assignments.get(daemon));
	}

	// A transition that ends an assignment, and so makes way for the next generation,
	// waits for the transactions that guard the daemon.
	private <T> T ending(String daemon, Supplier<T> transition) {
		Lock write = assignmentLock(daemon).writeLock();
		this.stores.take(write, "daemon '" + daemon + "'");
		try {
			return transition.get();
		}
		finally {
			write.unlock();
		}
	}

	private ReentrantReadWriteLock assignmentLock(String daemon) {
		return this.assignmentLocks.computeIfAbsent(daemon, (name) -> new ReentrantReadWriteLock(true));
	}

	private <T> T locked(Supplier<T> action) {
		this.stores.lock();
		try {
			return action.get();
		}
		finally {
			this.stores.unlock();
		}
	}

	private static boolean is(@Nullable Assignment assignment, long generation) {
		return assignment != null && assignment.generation() == generation;
	}

	private void put(String daemon, String node, AssignmentState state, long generation, long term, Instant now) {
		this.assignments.put(daemon, new Assignment(daemon, node, state, generation, term, now));
	}

}
