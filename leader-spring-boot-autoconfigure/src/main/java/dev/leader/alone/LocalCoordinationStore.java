package dev.leader.alone;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

import dev.leader.NodeInfo;
import dev.leader.alone.LocalStores.Lease;
import dev.leader.alone.LocalStores.Node;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.LeaseState;
import dev.leader.node.NodeRegistration;
import org.jspecify.annotations.Nullable;

/**
 * The leases and the member list of a node that runs alone. Releases are announced to
 * each listener on a thread of its own, in release order, as a database's notifications
 * are.
 */
final class LocalCoordinationStore implements CoordinationStore {

	private final LocalStores stores;

	private final List<Listening> listeners = new CopyOnWriteArrayList<>();

	LocalCoordinationStore(LocalStores stores) {
		this.stores = stores;
	}

	// A change of holder or term waits for the transactions that guard the group.
	@Override
	public AcquireResult acquire(String group, NodeRegistration node, Duration duration) {
		String nodeId = node.id();
		return this.stores.changingHands(group, () -> {
			this.stores.lock();
			try {
				Instant now = this.stores.now();
				Lease lease = this.stores.leases.get(group);
				Node registered = this.stores.nodes.get(nodeId);
				if ((lease != null && lease.holder() != null && !lease.holder().equals(nodeId)
						&& lease.expiresAt().isAfter(now)) || registered == null) {
					return new AcquireResult(false, (lease != null) ? lease.state(now) : null);
				}
				this.stores.nodes.put(nodeId, registered.heartbeat(registered.registration(), now));
				Lease granted = new Lease(group, nodeId, (lease != null) ? lease.term() + 1 : 1, now.plus(duration));
				this.stores.leases.put(group, granted);
				return new AcquireResult(true, granted.state(now));
			}
			finally {
				this.stores.unlock();
			}
		});
	}

	@Override
	public Tick tick(NodeRegistration node, Map<String, Long> held, Collection<String> groups, Duration leaseDuration,
			Duration nodeExpiry) {
		long sent = System.nanoTime();
		Tick tick;
		this.stores.lock();
		try {
			Instant now = this.stores.now();
			Node registered = this.stores.nodes.get(node.id());
			this.stores.nodes.put(node.id(),
					(registered != null) ? registered.heartbeat(node, now) : new Node(node, now, now, false));
			Map<String, LeaseState> before = new LinkedHashMap<>();
			for (String group : groups) {
				Lease lease = this.stores.leases.get(group);
				if (lease != null) {
					before.put(group, lease.state(now));
				}
			}
			Map<String, LeaseState> renewed = new LinkedHashMap<>();
			held.forEach((group, term) -> {
				Lease lease = this.stores.leases.get(group);
				if (lease != null && node.id().equals(lease.holder()) && lease.term() == term
						&& lease.expiresAt().isAfter(now)) {
					Lease renewal = new Lease(group, lease.holder(), term, now.plus(leaseDuration));
					this.stores.leases.put(group, renewal);
					renewed.put(group, renewal.state(now));
				}
			});
			this.stores.nodes.values()
				.removeIf((member) -> member.heartbeatAt().plus(nodeExpiry.multipliedBy(2)).isBefore(now));
			List<NodeInfo> members = new ArrayList<>();
			this.stores.nodes.values().forEach((member) -> members.add(info(member, now, nodeExpiry)));
			tick = new Tick(renewed, before, members);
		}
		finally {
			this.stores.unlock();
		}
		// The heartbeat reads the logs' ends, as the database stores' heartbeats do.
		this.stores.logStoreConfirms(groups, sent);
		return tick;
	}

	private static NodeInfo info(Node node, Instant now, Duration nodeExpiry) {
		NodeRegistration registration = node.registration();
		return new NodeInfo(registration.id(), registration.name(), registration.host(), registration.pid(),
				node.startedAt(), node.heartbeatAt(), node.heartbeatAt().plus(nodeExpiry).isAfter(now),
				registration.baseUrl(), registration.zone());
	}

	@Override
	public Collection<String> release(String nodeId, Map<String, Long> held) {
		List<String> released = new ArrayList<>();
		new TreeMap<>(held).forEach((group, term) -> {
			if (this.stores.changingHands(group, () -> releaseOne(nodeId, group, term))) {
				released.add(group);
			}
		});
		String successor;
		this.stores.lock();
		try {
			// The registered node that has run longest tries first, as on a database.
			successor = this.stores.nodes.values()
				.stream()
				.filter((node) -> !node.registration().id().equals(nodeId))
				.min(Comparator.comparing(Node::startedAt).thenComparing((node) -> node.registration().id()))
				.map((node) -> node.registration().id())
				.orElse(null);
		}
		finally {
			this.stores.unlock();
		}
		for (Listening listening : this.listeners) {
			released.forEach((group) -> listening.announce(group, successor));
		}
		return released;
	}

	private boolean releaseOne(String nodeId, String group, long term) {
		this.stores.lock();
		try {
			Lease lease = this.stores.leases.get(group);
			if (lease == null || !nodeId.equals(lease.holder()) || lease.term() != term) {
				return false;
			}
			this.stores.leases.put(group, new Lease(group, null, term, this.stores.now()));
			return true;
		}
		finally {
			this.stores.unlock();
		}
	}

	@Override
	public void deregister(NodeRegistration node) {
		this.stores.lock();
		try {
			this.stores.nodes.remove(node.id());
		}
		finally {
			this.stores.unlock();
		}
	}

	@Override
	public List<LeaseState> leases() {
		this.stores.lock();
		try {
			Instant now = this.stores.now();
			return this.stores.leases.values().stream().map((lease) -> lease.state(now)).toList();
		}
		finally {
			this.stores.unlock();
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

	/**
	 * One listener and the thread that announces releases to it.
	 */
	private static final class Listening {

		private final ReleaseListener listener;

		private final ExecutorService executor = Executors.newSingleThreadExecutor((runnable) -> {
			Thread thread = new Thread(runnable, "leader-local-notify");
			thread.setDaemon(true);
			return thread;
		});

		Listening(ReleaseListener listener) {
			this.listener = listener;
		}

		void announce(String group, @Nullable String successor) {
			try {
				this.executor.execute(() -> this.listener.released(group, successor));
			}
			catch (RejectedExecutionException ex) {
				// Closed meanwhile: nobody listens any more.
			}
		}

		void close() throws InterruptedException {
			this.executor.shutdown();
			this.executor.awaitTermination(5, TimeUnit.SECONDS);
		}

	}

}
