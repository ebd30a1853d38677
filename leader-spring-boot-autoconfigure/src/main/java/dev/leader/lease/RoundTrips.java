package dev.leader.lease;

import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;

import dev.leader.NodeInfo;
import dev.leader.RevokeReason;
import dev.leader.lease.CoordinationStore.AcquireResult;
import dev.leader.lease.CoordinationStore.Tick;
import dev.leader.lease.LeaseObservations.AcquireKeyNames;
import dev.leader.lease.LeaseObservations.HeartbeatKeyNames;
import dev.leader.node.FailureWarnings;
import dev.leader.node.NodeRegistration;
import dev.leader.node.OwnThreads;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.dao.DuplicateKeyException;

/**
 * The round trips of one node to the coordinator, one at a time: the heartbeat every
 * renew interval, which renews every lease held and reads every group's lease and the
 * member list, and a follower's acquire attempts, each scheduled for the moment the lease
 * it read runs out plus a little jitter, or after a failure, a retry interval later.
 * Every round trip runs with {@link #lock()} held, together with the state change it
 * leads to; the scheduled ones on {@code leader-io}.
 */
final class RoundTrips {

	private static final Log logger = LogFactory.getLog(LeaderEngine.class);

	private static final long MAX_JITTER_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

	private static final long MIN_RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

	private final CoordinationStore store;

	private final LeaseSettings settings;

	private final MonotonicClock clock;

	private final GroupLeases groups;

	private final OwnThreads threads;

	private final ReentrantLock lock = new ReentrantLock();

	private final AtomicBoolean running = new AtomicBoolean();

	private final DatabaseClockWatch databaseClock;

	private final Runnable tick = this::tick;

	private final FailureWarnings heartbeatFailures;

	private final FailureWarnings acquireFailures;

	private volatile NodeRegistration node;

	private volatile ScheduledExecutorService io;

	private volatile ObservationRegistry observationRegistry = ObservationRegistry.NOOP;

	/**
	 * The local monotonic instant at which the last heartbeat that succeeded was sent.
	 * The database wrote that heartbeat no earlier, so it cannot count this node dead
	 * before this instant plus the node expiry, however long the reply took.
	 */
	private volatile long lastHeartbeatSent;

	private volatile boolean heartbeated;

	// Set once the node gives up its leases before it stops: it heartbeats on but asks
	// for no lease.
	private volatile boolean leaving;

	// Whether the last heartbeat found this node's id registered by another live process,
	// and whether one since the start registered this process: it asks for no lease
	// before.
	private boolean duplicate;

	private boolean registered;

	private @Nullable Future<?> nextTick;

	RoundTrips(CoordinationStore store, LeaseSettings settings, MonotonicClock clock, NodeRegistration node,
			GroupLeases groups, OwnThreads threads) {
		this.store = store;
		this.settings = settings;
		this.clock = clock;
		this.node = node;
		this.groups = groups;
		this.threads = threads;
		this.databaseClock = new DatabaseClockWatch(node.id(), settings.safetyMargin());
		this.heartbeatFailures = new FailureWarnings(logger, "Leader node " + node.id() + " heartbeat",
				FailureWarnings.REPEAT);
		this.acquireFailures = new FailureWarnings(logger, "Leader node " + node.id() + " acquire",
				FailureWarnings.REPEAT);
		this.io = newExecutor();
	}

	/**
	 * Returns the lock held for every round trip and the state change that follows it,
	 * whichever thread makes them.
	 * @return the lock, taken before the lock of {@link GroupLeases}
	 */
	ReentrantLock lock() {
		return this.lock;
	}

	NodeRegistration node() {
		return this.node;
	}

	void advertiseDaemons(Set<String> daemons) {
		this.node = this.node.withDaemons(daemons);
	}

	void advertiseAddress(@Nullable String baseUrl, @Nullable String zone) {
		this.node = this.node.withAddress(baseUrl, zone);
	}

	void setObservationRegistry(ObservationRegistry observationRegistry) {
		this.observationRegistry = observationRegistry;
	}

	boolean isRunning() {
		return this.running.get();
	}

	/**
	 * Replaces the thread a stop ended, and has the node register again before it asks
	 * for a lease, since the stop deregistered it; then counts as running.
	 */
	void prepareStart() {
		if (this.io.isShutdown()) {
			this.io = newExecutor();
		}
		this.leaving = false;
		this.lock.lock();
		try {
			this.registered = false;
		}
		finally {
			this.lock.unlock();
		}
		this.running.set(true);
	}

	/**
	 * Makes the first round trip, on {@code leader-io}.
	 */
	void firstTick() {
		this.io.execute(this.tick);
	}

	/**
	 * Asks for no lease from now on, until the next start; heartbeats and renewals go on.
	 */
	void leave() {
		this.leaving = true;
	}

	/**
	 * Stops scheduling round trips.
	 * @return whether it was running
	 */
	boolean markStopped() {
		return this.running.compareAndSet(true, false);
	}

	/**
	 * Ends {@code leader-io}, interrupting a round trip in flight, and waits up to 5 s
	 * for it.
	 */
	void stop() {
		this.io.shutdownNow();
		try {
			this.io.awaitTermination(5, TimeUnit.SECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	<T> Future<T> submit(Callable<T> task) {
		return this.io.submit(task);
	}

	void execute(Runnable task) {
		this.io.execute(task);
	}

	void schedule(Runnable task, long delayNanos) {
		this.io.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
	}

	Optional<Duration> sinceLastHeartbeat() {
		return this.heartbeated ? Optional.of(Duration.ofNanos(this.clock.nanoTime() - this.lastHeartbeatSent))
				: Optional.empty();
	}

	long databaseClockSteps() {
		return this.databaseClock.steps();
	}

	/**
	 * Attempts to acquire the group unless this node holds it, is not registered yet, has
	 * not heartbeated for nearly the node expiry, or stopped. A node silent that long may
	 * have been paused, and another process started with its id may have taken its
	 * registration over meanwhile: it asks for a lease again only after its next
	 * heartbeat tells it that its registration is still its own.
	 * @param group the group
	 */
	void attemptAcquire(GroupLease group) {
		this.lock.lock();
		try {
			if (mayAcquire(group)) {
				acquire(group);
			}
		}
		finally {
			this.lock.unlock();
		}
	}

	private boolean mayAcquire(GroupLease group) {
		return this.running.get() && !this.leaving && this.registered && heartbeatedRecently() && group.heldTerm() < 0;
	}

	/**
	 * Returns whether an attempt to acquire the group would ask the store now, as read
	 * without waiting for a round trip under way.
	 * @param group the group
	 * @return whether it would
	 */
	boolean wouldAcquire(GroupLease group) {
		return mayAcquire(group) && group.cooling() <= 0;
	}

	private boolean heartbeatedRecently() {
		return this.heartbeated && this.clock.nanoTime()
				- this.lastHeartbeatSent < this.settings.nodeExpiry().minus(this.settings.safetyMargin()).toNanos();
	}

	/**
	 * Schedules an acquire attempt of the group, replacing the one scheduled before; at
	 * least a few milliseconds away, so that a failing store is not hammered.
	 * @param group the group
	 * @param delayNanos the delay
	 */
	void scheduleWake(GroupLease group, long delayNanos) {
		if (this.running.get()) {
			group.replaceWake(this.io.schedule(group.acquireAfterRelease(), Math.max(delayNanos, MIN_RETRY_NANOS),
					TimeUnit.NANOSECONDS));
		}
	}

	void cancelTick() {
		GroupLease.cancel(this.nextTick);
	}

	private void tick() {
		this.lock.lock();
		try {
			if (this.running.get()) {
				heartbeat();
			}
		}
		catch (RuntimeException ex) {
			// A failure after the round trip (a bug, a listener): the heartbeat must go
			// on, or this node would stop renewing and following without a word.
			logger.error("Leader node " + this.node.id() + " failed to process its heartbeat", ex);
			scheduleTick(this.settings.retryInterval().toNanos());
		}
		finally {
			this.lock.unlock();
		}
	}

	private void heartbeat() {
		Map<String, Long> held = this.groups.heldTerms();
		Observation observation = LeaseObservations.HEARTBEAT.observation(this.observationRegistry)
			.lowCardinalityKeyValue(HeartbeatKeyNames.ROLE.asString(), held.isEmpty() ? "follower" : "leader");
		long sent = this.clock.nanoTime();
		Tick tick;
		try (Observation.Scope scope = observation.start().openScope()) {
			tick = this.store.tick(this.node, held, this.groups.liveNames(), this.settings.duration(),
					this.settings.nodeExpiry());
		}
		catch (DuplicateKeyException ex) {
			// Another live process has this node's id: whatever it holds is its own, so
			// nothing is held here.
			observation.lowCardinalityKeyValue(HeartbeatKeyNames.OUTCOME.asString(), "error").error(ex).stop();
			if (!this.duplicate) {
				this.duplicate = true;
				logger.error(ex.getMessage());
			}
			this.registered = false;
			this.groups.stepDown(held.keySet(), RevokeReason.ERROR);
			scheduleTick(this.settings.renewInterval().toNanos());
			return;
		}
		catch (RuntimeException ex) {
			observation.lowCardinalityKeyValue(HeartbeatKeyNames.OUTCOME.asString(), "error").error(ex).stop();
			heartbeatFailed(held.keySet(), ex);
			scheduleTick(this.settings.retryInterval().toNanos());
			return;
		}
		this.heartbeatFailures.succeeded(this.clock.nanoTime());
		this.registered = true;
		if (this.duplicate) {
			this.duplicate = false;
			GroupLeases.info("Leader node %s registered: the other process with its id has gone silent",
					this.node.id());
		}
		long received = this.clock.nanoTime();
		observation
			.lowCardinalityKeyValue(HeartbeatKeyNames.OUTCOME.asString(),
					tick.renewed().keySet().containsAll(held.keySet()) ? "success" : "lost")
			.stop();
		checkDatabaseClock(tick, sent, received);
		this.lastHeartbeatSent = sent;
		this.heartbeated = true;
		if (logger.isDebugEnabled()) {
			logger.debug(String.format("Leader node %s heartbeat renewed=%s in %d ms", this.node.id(),
					tick.renewed().keySet(), TimeUnit.NANOSECONDS.toMillis(received - sent)));
		}
		List<GroupLease> candidates = this.groups.heartbeated(held, tick, sent, received);
		for (GroupLease group : candidates) {
			considerAcquiring(group, received);
		}
		scheduleTick(sent + this.settings.renewInterval().toNanos() - this.clock.nanoTime());
	}

	private void checkDatabaseClock(Tick tick, long sent, long received) {
		Instant databaseTime = null;
		for (NodeInfo member : tick.members()) {
			if (member.id().equals(this.node.id())) {
				databaseTime = member.heartbeatAt();
			}
		}
		if (databaseTime != null) {
			this.databaseClock.heartbeat(databaseTime, sent, received);
		}
	}

	private void considerAcquiring(GroupLease group, long readAt) {
		if (group.acquirableNow()) {
			attemptAcquire(group);
		}
		else {
			scheduleWake(group, readAt + group.view().remaining().toNanos() + jitter() - this.clock.nanoTime());
		}
	}

	private void acquire(GroupLease group) {
		long cooling = group.cooling();
		if (cooling > 0) {
			scheduleWake(group, cooling);
			return;
		}
		Observation observation = LeaseObservations.ACQUIRE.observation(this.observationRegistry)
			.lowCardinalityKeyValue(AcquireKeyNames.GROUP.asString(), group.name());
		long sent = this.clock.nanoTime();
		AcquireResult result;
		try (Observation.Scope scope = observation.start().openScope()) {
			result = this.store.acquire(group.name(), this.node, this.settings.duration());
		}
		catch (RuntimeException ex) {
			observation.lowCardinalityKeyValue(AcquireKeyNames.OUTCOME.asString(), "error").error(ex).stop();
			this.acquireFailures.failed(this.clock.nanoTime(), ex, "this node cannot take the lease of " + group.name()
					+ " until an acquire succeeds; retrying every " + this.settings.retryInterval().toMillis() + " ms");
			scheduleWake(group, this.settings.retryInterval().toNanos());
			return;
		}
		long received = this.clock.nanoTime();
		// The grant's event first: the observation's handlers are not on a hand-over's
		// path.
		this.groups.acquired(group, result, sent, received);
		this.acquireFailures.succeeded(received);
		observation.lowCardinalityKeyValue(AcquireKeyNames.OUTCOME.asString(), result.granted() ? "granted" : "refused")
			.stop();
		if (!result.granted()) {
			LeaseState lease = result.lease();
			long wait = (lease != null && lease.isHeld()) ? lease.remaining().toNanos() + jitter()
					: this.settings.retryInterval().toNanos();
			scheduleWake(group, received + wait - this.clock.nanoTime());
		}
	}

	// A node that holds leases warns at every failed renewal, a few inside the safe
	// window; one that holds none, or no longer, would otherwise fail every retry
	// interval in silence, leading nothing.
	private void heartbeatFailed(Collection<String> held, RuntimeException ex) {
		this.groups.renewalsFailed(held);
		long now = this.clock.nanoTime();
		if (held.isEmpty()) {
			this.heartbeatFailures.failed(now, ex,
					"until one succeeds this node renews no lease and reads none, "
							+ "and the other nodes count it dead after the node expiry; retrying every "
							+ this.settings.retryInterval().toMillis() + " ms");
		}
		else {
			logger.warn("Leader node " + this.node.id() + " could not renew " + held
					+ "; retrying inside the safe window: " + ex);
			this.heartbeatFailures.failed(now, ex, null);
		}
	}

	private void scheduleTick(long delayNanos) {
		if (this.running.get()) {
			cancelTick();
			this.nextTick = this.io.schedule(this.tick, Math.max(delayNanos, 0), TimeUnit.NANOSECONDS);
		}
	}

	private static long jitter() {
		return ThreadLocalRandom.current().nextLong(MAX_JITTER_NANOS);
	}

	private ScheduledExecutorService newExecutor() {
		return Executors.newSingleThreadScheduledExecutor(this.threads.named("leader-io"));
	}

}
