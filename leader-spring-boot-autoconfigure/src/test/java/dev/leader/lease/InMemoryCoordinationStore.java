package dev.leader.lease;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

import dev.leader.NodeInfo;
import dev.leader.node.NodeRegistration;
import org.jspecify.annotations.Nullable;

import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.dao.DuplicateKeyException;

/**
 * A {@link CoordinationStore} in this JVM's memory, for tests that need no database: one
 * fair lock serializes every call, as the coordinator's row locks do, and its clock (the
 * "database clock") is this JVM's monotonic clock, so that expiry is decided by the store
 * alone. Releases are announced to each listener on its own thread, in release order. It
 * passes the store contract suite; on top, a test can {@linkplain #setReachable(boolean)
 * cut it off} so that every call fails as an unreachable database does.
 */
class InMemoryCoordinationStore implements CoordinationStore {

	private final Instant origin = Instant.now();

	private final long originNanos = System.nanoTime();

	private final ReentrantLock lock = new ReentrantLock(true);

	private final Map<String, Lease> leases = new LinkedHashMap<>();

	private final Map<String, Node> nodes = new LinkedHashMap<>();

	private final List<Listening> listeners = new CopyOnWriteArrayList<>();

	private @Nullable Instant lastNow;

	private final long latencyNanos;

	private volatile boolean reachable = true;

	private final AtomicInteger unreadableTicks = new AtomicInteger();

	private volatile boolean ticksFail;

	/**
	 * Creates a store that answers at once.
	 */
	InMemoryCoordinationStore() {
		this(Duration.ZERO);
	}

	/**
	 * Creates a store whose calls each take the given time before they are served, as a
	 * network round trip does, so that racing callers interleave as they would against a
	 * real coordinator.
	 * @param latency the time each call takes
	 */
	InMemoryCoordinationStore(Duration latency) {
		this.latencyNanos = latency.toNanos();
	}

	/**
	 * Makes every later call succeed, or fail with a
	 * {@link DataAccessResourceFailureException}.
	 * @param reachable whether the store answers
	 */
	void setReachable(boolean reachable) {
		this.reachable = reachable;
	}

	/**
	 * Makes every later heartbeat fail, or succeed again, while every other call is
	 * served: a node whose heartbeats cannot get through, as a paused one's do not.
	 * @param fail whether heartbeats fail
	 */
	void failTicks(boolean fail) {
		this.ticksFail = fail;
	}

	/**
	 * Makes the next heartbeats succeed in the store but answer a tick without its member
	 * list, which the engine cannot read: a stand-in for a bug in processing a tick.
	 * @param count how many ticks answer so
	 */
	void answerUnreadableTicks(int count) {
		this.unreadableTicks.set(count);
	}

	@Override
	public AcquireResult acquire(String group, NodeRegistration node, Duration duration) {
		String nodeId = node.id();
		roundTrip();
		this.lock.lock();
		try {
			requireReachable();
			Instant now = now();
			Lease lease = this.leases.get(group);
			if (lease != null && lease.holder != null && !lease.holder.equals(nodeId) && lease.expiresAt.isAfter(now)) {
				return new AcquireResult(false, lease.state(now));
			}
			Lease granted = new Lease(group, nodeId, (lease != null) ? lease.term + 1 : 1, now.plus(duration));
			this.leases.put(group, granted);
			return new AcquireResult(true, granted.state(now));
		}
		finally {
			this.lock.unlock();
		}
	}

	@Override
	public Tick tick(NodeRegistration node, Map<String, Long> held, Collection<String> groups, Duration leaseDuration,
			Duration nodeExpiry) {
		roundTrip();
		this.lock.lock();
		try {
			requireReachable();
			if (this.ticksFail) {
				throw new DataAccessResourceFailureException("The in-memory store fails heartbeats");
			}
			Instant now = now();
			String incarnation = node.host() + ":" + node.pid();
			Node registered = this.nodes.get(node.id());
			if (registered != null && !registered.incarnation.equals(incarnation)
					&& registered.heartbeatAt.plus(nodeExpiry).isAfter(now)) {
				throw new DuplicateKeyException("Node id '" + node.id() + "' is registered by another live process");
			}
			Instant startedAt = (registered != null && registered.incarnation.equals(incarnation))
					? registered.startedAt : now;
			this.nodes.put(node.id(), new Node(node, incarnation, startedAt, now));
			Map<String, LeaseState> before = new LinkedHashMap<>();
			for (String group : groups) {
				Lease lease = this.leases.get(group);
				if (lease != null) {
					before.put(group, lease.state(now));
				}
			}
			Map<String, LeaseState> renewed = new LinkedHashMap<>();
			held.forEach((group, term) -> {
				Lease lease = this.leases.get(group);
				if (lease != null && node.id().equals(lease.holder) && lease.term == term
						&& lease.expiresAt.isAfter(now)) {
					Lease renewal = new Lease(group, lease.holder, term, now.plus(leaseDuration));
					this.leases.put(group, renewal);
					renewed.put(group, renewal.state(now));
				}
			});
			this.nodes.values().removeIf((member) -> member.heartbeatAt.plus(nodeExpiry.multipliedBy(2)).isBefore(now));
			List<NodeInfo> members = new ArrayList<>();
			this.nodes.values().forEach((member) -> members.add(member.info(now, nodeExpiry)));
			boolean unreadable = this.unreadableTicks.getAndUpdate((left) -> Math.max(left - 1, 0)) > 0;
			return new Tick(renewed, before, unreadable ? null : members);
		}
		finally {
			this.lock.unlock();
		}
	}

	@Override
	public Collection<String> release(String nodeId, Map<String, Long> held) {
		List<String> released = new ArrayList<>();
		String successor;
		roundTrip();
		this.lock.lock();
		try {
			requireReachable();
			Instant now = now();
			held.forEach((group, term) -> {
				Lease lease = this.leases.get(group);
				if (lease != null && nodeId.equals(lease.holder) && lease.term == term) {
					this.leases.put(group, new Lease(group, null, term, now));
					released.add(group);
				}
			});
			successor = this.nodes.values()
				.stream()
				.filter((node) -> !node.registration.id().equals(nodeId))
				.min(Comparator.comparing((Node node) -> node.startedAt)
					.thenComparing((node) -> node.registration.id()))
				.map((node) -> node.registration.id())
				.orElse(null);
		}
		finally {
			this.lock.unlock();
		}
		for (Listening listening : this.listeners) {
			released.forEach((group) -> listening.announce(group, successor));
		}
		return released;
	}

	@Override
	public void deregister(NodeRegistration node) {
		roundTrip();
		this.lock.lock();
		try {
			requireReachable();
			this.nodes.remove(node.id());
		}
		finally {
			this.lock.unlock();
		}
	}

	@Override
	public List<LeaseState> leases() {
		roundTrip();
		this.lock.lock();
		try {
			requireReachable();
			Instant now = now();
			return this.leases.values().stream().map((lease) -> lease.state(now)).toList();
		}
		finally {
			this.lock.unlock();
		}
	}

	@Override
	public AutoCloseable listen(ReleaseListener listener) {
		Listening listening = new Listening(listener);
		this.listeners.add(listening);
		return () -> {
			this.listeners.remove(listening);
			listening.close();
		};
	}

	private void roundTrip() {
		if (this.latencyNanos > 0) {
			LockSupport.parkNanos(this.latencyNanos);
		}
	}

	private void requireReachable() {
		if (!this.reachable) {
			throw new DataAccessResourceFailureException("The in-memory store is cut off");
		}
	}

	/**
	 * Returns the store's clock, strictly increasing from one call to the next. Called
	 * with the lock held.
	 */
	private Instant now() {
		Instant now = this.origin.plusNanos(System.nanoTime() - this.originNanos);
		if (this.lastNow != null && !now.isAfter(this.lastNow)) {
			now = this.lastNow.plusNanos(1);
		}
		this.lastNow = now;
		return now;
	}

	private record Lease(String group, @Nullable String holder, long term, Instant expiresAt) {

		LeaseState state(Instant now) {
			return new LeaseState(this.group, this.holder, this.term, this.expiresAt,
					Duration.between(now, this.expiresAt));
		}

	}

	private record Node(NodeRegistration registration, String incarnation, Instant startedAt, Instant heartbeatAt) {

		NodeInfo info(Instant now, Duration nodeExpiry) {
			return new NodeInfo(this.registration.id(), this.registration.name(), this.registration.host(),
					this.registration.pid(), this.startedAt, this.heartbeatAt,
					this.heartbeatAt.plus(nodeExpiry).isAfter(now));
		}

	}

	/**
	 * One listener and the thread that announces releases to it, one at a time and in
	 * order.
	 */
	private static final class Listening {

		private final ReleaseListener listener;

		private final ExecutorService executor = Executors.newSingleThreadExecutor((runnable) -> {
			Thread thread = new Thread(runnable, "in-memory-store-notify");
			thread.setDaemon(true);
			return thread;
		});

		Listening(ReleaseListener listener) {
			this.listener = listener;
		}

		void announce(String group, @Nullable String successor) {
			if (!this.executor.isShutdown()) {
				this.executor.execute(() -> this.listener.released(group, successor));
			}
		}

		void close() throws InterruptedException {
			this.executor.shutdown();
			this.executor.awaitTermination(5, TimeUnit.SECONDS);
		}

	}

}
