package dev.leader.lease;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

import dev.leader.RevokeReason;
import dev.leader.node.NodeRegistration;
import dev.leader.node.OrderedEvents;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * The hand-over of a lease from a node that gives it up to the next: the leaving side (a
 * yield, a stop) steps down, releases once its revoked events have reached their
 * listeners, and the taking side acquires when the store announces the release. The path
 * is latency-sensitive: it takes no thread hand-off that it can spare and links its
 * lambdas when the engine is created.
 */
final class ReleaseHandOver {

	private static final Log logger = LogFactory.getLog(LeaderEngine.class);

	private static final Duration REVOKE_DELIVERY_TIMEOUT = Duration.ofSeconds(1);

	/**
	 * How long a follower waits before it acquires a released lease when the store named
	 * another node to try first.
	 */
	private static final long RELEASE_STAGGER_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

	/**
	 * How long a stopping node holds the rest of its shutdown (the context's close, the
	 * daemons' drain, its connections' end) after it released leases while other nodes
	 * live: the successor's acquire and its grant's events then do not share the database
	 * server, or a machine the nodes share, with the work of a shutdown.
	 */
	private static final long SUCCESSOR_HEAD_START_MILLIS = 50;

	/**
	 * How long after a release that named another node the end of the holder's session is
	 * taken for the same hand-over.
	 */
	private static final long HAND_OVER_NANOS = TimeUnit.SECONDS.toNanos(1);

	private final CoordinationStore store;

	private final NodeRegistration node;

	private final String nodeId;

	private final LeaseSettings settings;

	private final MonotonicClock clock;

	private final GroupLeases groups;

	private final RoundTrips roundTrips;

	private final OrderedEvents events;

	// When a release of each group last named another node to try first, on the clock.
	private final Map<String, Long> namedOthers = new ConcurrentHashMap<>();

	ReleaseHandOver(CoordinationStore store, NodeRegistration node, LeaseSettings settings, MonotonicClock clock,
			GroupLeases groups, RoundTrips roundTrips, OrderedEvents events) {
		this.store = store;
		this.node = node;
		this.nodeId = node.id();
		this.settings = settings;
		this.clock = clock;
		this.groups = groups;
		this.roundTrips = roundTrips;
		this.events = events;
		// A JVM links a lambda the first time it creates it, and a node releases on a
		// hand-over's path, often once in its life: link it now, as the tasks of each
		// group are.
		releaseOnce(Map.of(), new AtomicBoolean(true));
	}

	/**
	 * Steps down from the group, releases it and stays out for the yield cooldown; on
	 * {@code leader-io}, after the round trip under way.
	 * @param group the group
	 * @return whether this node held it
	 * @throws ExecutionException if the yield failed
	 * @throws InterruptedException if the caller was interrupted while waiting
	 */
	boolean yield(GroupLease group) throws ExecutionException, InterruptedException {
		return this.roundTrips.submit(() -> yieldWithRoundTripsHeld(group)).get();
	}

	private boolean yieldWithRoundTripsHeld(GroupLease group) {
		this.roundTrips.lock().lock();
		try {
			long term = this.groups.yield(group);
			if (term < 0) {
				return false;
			}
			long sent = this.clock.nanoTime();
			Map<String, Long> held = Map.of(group.name(), term);
			releaseAfterRevokes(held);
			this.groups.logReleased(held, RevokeReason.YIELDED);
			if (logger.isDebugEnabled()) {
				logger.debug(String.format("Leader group=%s node=%s action=released term=%d latency=%dms", group.name(),
						this.nodeId, term, TimeUnit.NANOSECONDS.toMillis(this.clock.nanoTime() - sent)));
			}
			this.roundTrips.scheduleWake(group, this.settings.yieldCooldown().toNanos());
			return true;
		}
		finally {
			this.roundTrips.lock().unlock();
		}
	}

	/**
	 * Ends every leadership of this node with {@link RevokeReason#SHUTDOWN} and releases
	 * the leases once the revokes are delivered, as {@link #shutdown()} does, but keeps
	 * the node registered: it heartbeats on and asks for no lease until the engine starts
	 * again. Waits up to 10 s for a round trip in flight.
	 */
	void relinquish() {
		this.roundTrips.leave();
		try {
			if (!this.roundTrips.lock().tryLock(10, TimeUnit.SECONDS)) {
				return;
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return;
		}
		try {
			Map<String, Long> held = stepDownAndReleaseAll();
			if (!held.isEmpty()) {
				GroupLeases.info("Leader node %s is stopping, released %s", this.nodeId, held.keySet());
				giveSuccessorsAHeadStart();
			}
		}
		finally {
			this.roundTrips.lock().unlock();
		}
	}

	/**
	 * Waits {@link #SUCCESSOR_HEAD_START_MILLIS} if another node is alive to take over,
	 * with the round trips' lock held, so that a context's close, which gives the leases
	 * up too, waits for it as well.
	 */
	private void giveSuccessorsAHeadStart() {
		boolean successors = this.groups.members()
			.stream()
			.anyMatch((member) -> member.alive() && !member.id().equals(this.nodeId));
		if (successors) {
			try {
				Thread.sleep(SUCCESSOR_HEAD_START_MILLIS);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		}
	}

	/**
	 * Ends every leadership, releases the leases and deregisters, on the calling thread
	 * once no round trip is under way, which spares a stopping leader's hand-over the
	 * wake-up of {@code leader-io}.
	 * @return whether it could, that is, whether a round trip in flight ended within 10 s
	 */
	boolean shutdown() {
		try {
			if (!this.roundTrips.lock().tryLock(10, TimeUnit.SECONDS)) {
				return false;
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return false;
		}
		try {
			this.roundTrips.cancelTick();
			Map<String, Long> held = stepDownAndReleaseAll();
			try {
				this.store.deregister(this.node);
			}
			catch (RuntimeException ex) {
				logger.warn("Leader node " + this.nodeId + " could not deregister: " + ex);
			}
			GroupLeases.info("Leader node %s stopped, released %s", this.nodeId, held.keySet());
			return true;
		}
		finally {
			this.roundTrips.lock().unlock();
		}
	}

	/**
	 * Steps down from every group with {@link RevokeReason#SHUTDOWN}, releases the terms
	 * once the revokes are delivered, then logs them; with the round trips' lock held.
	 * @return the terms released, by group name
	 */
	private Map<String, Long> stepDownAndReleaseAll() {
		Map<String, Long> held = this.groups.stepDownAll(RevokeReason.SHUTDOWN);
		releaseAfterRevokes(held);
		this.groups.logReleased(held, RevokeReason.SHUTDOWN);
		return held;
	}

	/**
	 * Acquires a released lease: at once if the store named this node, or none, to try
	 * first, on the notifying thread unless a round trip is under way; otherwise after
	 * {@link #RELEASE_STAGGER_NANOS}, so that the successor's acquire neither queues
	 * behind this node's on the lease's row nor competes with it for the machine. The end
	 * of the holder's session, which the store announces without a successor, counts as
	 * part of the release that named another node shortly before it
	 * ({@link #HAND_OVER_NANOS}): a holder that stops releases, then gives its session's
	 * locks back.
	 * @param name the group released
	 * @param successor the node that should try first, or {@code null}
	 */
	void onReleased(String name, @Nullable String successor) {
		GroupLease group = this.groups.find(name);
		if (group != null && this.roundTrips.isRunning()) {
			if (first(name, successor)) {
				if (this.roundTrips.lock().tryLock()) {
					try {
						this.roundTrips.attemptAcquire(group);
					}
					finally {
						this.roundTrips.lock().unlock();
					}
				}
				else {
					this.roundTrips.execute(group.acquireAfterRelease());
				}
			}
			else {
				this.roundTrips.schedule(group.acquireAfterRelease(), RELEASE_STAGGER_NANOS);
			}
		}
	}

	/**
	 * Takes a lease that another node handed to this one, as a released lease it is named
	 * to try first; or, if this node would not ask for it now (it stops, does not take
	 * part in the group, holds an older term of it, or cools down after a yield), gives
	 * it back on {@code leader-io} after the round trip under way, so that the others
	 * acquire it.
	 * @param name the group
	 * @param node the node it was handed to, which may be another node of the store
	 * @param term the term it was handed over under
	 */
	void onHandedOver(String name, String node, long term) {
		if (!node.equals(this.nodeId)) {
			return;
		}
		GroupLease group = this.groups.find(name);
		if (group != null && this.roundTrips.wouldAcquire(group)) {
			onReleased(name, node);
			return;
		}
		Runnable giveBack = () -> giveBack(name, group, term);
		try {
			this.roundTrips.execute(giveBack);
		}
		catch (RejectedExecutionException ex) {
			giveBack.run();
		}
	}

	// Gives a lease handed to this node back, with the round trips' lock held, unless an
	// acquire took it meanwhile or would take it now.
	private void giveBack(String name, @Nullable GroupLease group, long term) {
		this.roundTrips.lock().lock();
		try {
			if (group != null && (group.heldTerm() == term || this.roundTrips.wouldAcquire(group))) {
				this.roundTrips.attemptAcquire(group);
				return;
			}
			GroupLeases.info("Leader node %s gives back %s, handed to it while it takes none of it", this.nodeId, name);
			this.store.release(this.nodeId, Map.of(name, term));
		}
		catch (RuntimeException ex) {
			logger.warn("Leader node " + this.nodeId + " could not give back " + name
					+ "; it gives it back at a heartbeat, or its lease expires: " + ex);
		}
		finally {
			this.roundTrips.lock().unlock();
		}
	}

	/**
	 * Returns whether this node should try first to acquire a released lease, and
	 * remembers a release that named another node.
	 * @param name the group released
	 * @param successor the node the store named to try first, or {@code null}
	 * @return whether to acquire at once
	 */
	private boolean first(String name, @Nullable String successor) {
		long now = this.clock.nanoTime();
		if (successor == null) {
			Long named = this.namedOthers.get(name);
			return named == null || now - named >= HAND_OVER_NANOS;
		}
		if (successor.equals(this.nodeId)) {
			this.namedOthers.remove(name);
			return true;
		}
		this.namedOthers.put(name, now);
		return false;
	}

	/**
	 * Releases the leases once the revoked events published so far have reached their
	 * listeners, so that running {@code @LeaderOnly} calls are interrupted before another
	 * node can be granted a lease. The release runs on {@code leader-events} right after
	 * those deliveries, which spares the hand-over a thread hand-off. If they take longer
	 * than {@link #REVOKE_DELIVERY_TIMEOUT} (a listener that blocks, or one that stops
	 * the engine on that thread), this thread releases instead. Returns once the release
	 * is done.
	 * @param held the terms to release, by group name
	 */
	private void releaseAfterRevokes(Map<String, Long> held) {
		if (held.isEmpty()) {
			return;
		}
		AtomicBoolean taken = new AtomicBoolean();
		Runnable release = releaseOnce(held, taken);
		Future<?> released;
		try {
			released = this.events.afterDelivered(release);
		}
		catch (RejectedExecutionException ex) {
			release.run();
			return;
		}
		try {
			released.get(REVOKE_DELIVERY_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
		}
		catch (TimeoutException ex) {
			if (taken.compareAndSet(false, true)) {
				logger.warn("Leader node " + this.nodeId + " releases " + held.keySet()
						+ " before its revoked events were delivered: they took more than "
						+ REVOKE_DELIVERY_TIMEOUT.toMillis() + " ms");
				releaseQuietly(held);
			}
			else {
				awaitQuietly(released); // the release is under way on leader-events
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		catch (ExecutionException ex) {
			// releaseQuietly logs its failures and throws nothing
		}
	}

	/**
	 * Returns a task that releases the leases unless the flag shows that another thread
	 * took them over.
	 * @param held the terms to release, by group name
	 * @param taken set by the thread that releases, so that only one does
	 * @return the task
	 */
	private Runnable releaseOnce(Map<String, Long> held, AtomicBoolean taken) {
		return () -> {
			if (taken.compareAndSet(false, true)) {
				releaseQuietly(held);
			}
		};
	}

	private void releaseQuietly(Map<String, Long> held) {
		if (held.isEmpty()) {
			return;
		}
		try {
			this.store.handOver(this.nodeId, held);
		}
		catch (RuntimeException ex) {
			logger.warn("Leader node " + this.nodeId + " could not release " + held.keySet()
					+ "; other nodes take over when the lease expires: " + ex);
		}
	}

	private static void awaitQuietly(Future<?> future) {
		try {
			future.get();
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		catch (ExecutionException ex) {
			// the task logged its failure
		}
	}

}
