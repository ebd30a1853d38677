package dev.leader.lease;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

import dev.leader.FencingToken;
import dev.leader.LeaderInfo;
import dev.leader.Leadership;
import dev.leader.NodeInfo;
import dev.leader.RevokeReason;
import dev.leader.node.Names;
import dev.leader.node.NodeRegistration;
import dev.leader.node.OrderedEvents;
import dev.leader.node.OwnThreads;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * Lease-based leader election for a set of groups, plus this node's membership heartbeat.
 * Usable without a Spring context: construct it with a store, call {@link #start()}, and
 * {@link #stop()} to release. A stopped engine holds no thread and no connection, and can
 * be started again (a context's {@code stop()} and {@code start()}, a CRaC checkpoint and
 * restore).
 * <p>
 * <b>Guarantees.</b> Never more than one leader per group and term (the coordinator
 * grants a lease to one node at a time and raises the term on every new holder);
 * sometimes briefly none, for at most the remaining lease after a crash. A node believes
 * it leads only inside its safe window, measured on {@link System#nanoTime()} from the
 * moment the successful acquire or renewal was <em>sent</em>, for the lease duration
 * minus the safety margin. The watchdog closes the window on its own thread, so a node
 * steps down on time even while its round trip to the coordinator hangs. Every grant is
 * followed by exactly one revoke of the same term.
 * <p>
 * <b>Timing.</b> One round trip per renew interval heartbeats the node, renews every
 * lease it holds and reads every group's lease and the member list. A follower attempts
 * to acquire only when the lease it read expires (in the coordinator's time, converted to
 * a local deadline that is never early) or when the store wakes it after a release, so a
 * crashed leader is replaced within the lease duration and a stopping one at once.
 * <p>
 * <b>Threads and locks.</b> This is the one place that states them for the package.
 * <ul>
 * <li>{@code leader-io} makes the scheduled round trips ({@link RoundTrips}): heartbeats,
 * acquire attempts and yields. A round trip and the state change it leads to run with the
 * round-trip lock held ({@link RoundTrips#lock()}), so that they run one at a time
 * whichever thread makes them. To spare a hand-over a thread hand-off, the thread that
 * calls {@link #relinquish()} or {@link #stop()} and the store's notification thread
 * (which delivers release wake-ups, {@link ReleaseHandOver#onReleased}) make their round
 * trip themselves when no other is under way.</li>
 * <li>{@code leader-watchdog} closes safe windows ({@link SafeWindowWatchdog}), taking
 * only the transition lock.</li>
 * <li>{@code leader-events} delivers events in order ({@link OrderedEvents}), to the
 * group's listeners and then to the publisher; a failing listener is logged and delivery
 * goes on. A stopping or yielding leader's release runs there right after the delivery of
 * its revoked events.</li>
 * <li>Caller threads read a group's state ({@link #isLeader}, {@link #token},
 * {@link #leader}) without any lock, from volatile fields; {@link #yield} hands its work
 * to {@code leader-io} and waits; {@link #awaitLeadership} waits on the group's monitor,
 * which every grant notifies.</li>
 * </ul>
 * The transition lock of {@link GroupLeases} guards every change of a {@link GroupLease}
 * (holding, renewal failure, the lease read, the watchdog's closer) and the member list,
 * and is held while the change's event is published, so that events are published in the
 * order of the transitions. The round-trip lock is always taken before it, and guards a
 * group's cooldown and scheduled acquire, the registration state and the next heartbeat.
 * A third lock makes a {@link #start()} wait until the threads of the previous run are
 * gone.
 * <p>
 * <b>Observability.</b> Every acquire attempt and every heartbeat round trip is a
 * Micrometer {@link Observation} ({@link LeaseObservations}) on the registry given to
 * {@link #setObservationRegistry(ObservationRegistry)}, and a {@link LeaseMonitor}
 * receives the time groups go without a leader. Each transition is logged once at INFO
 * with group, node, action, term and latency; the steady-state round trip only at DEBUG.
 */
public final class LeaderEngine implements Leadership, LeaseStatus, Enrolment {

	private static final Log logger = LogFactory.getLog(LeaderEngine.class);

	private final CoordinationStore store;

	private final LeaseSettings settings;

	private final OwnThreads threads = new OwnThreads();

	private final SafeWindowWatchdog watchdog;

	private final OrderedEvents events;

	private final GroupLeases groups;

	private final RoundTrips roundTrips;

	private final AtomicLong sessionsLost = new AtomicLong();

	private volatile long sessionLostAt;

	private final List<Runnable> sessionLostActions = new CopyOnWriteArrayList<>();

	private final ReleaseHandOver handOver;

	private final ReentrantLock threadsLock = new ReentrantLock();

	private @Nullable AutoCloseable releaseSubscription;

	/**
	 * Creates an engine.
	 * @param store the coordination store
	 * @param settings the timing
	 * @param node this node's registration
	 * @param groups the groups to take part in, more can be added with
	 * {@link #addGroup(String)}
	 * @param publisher receives every event, on the {@code leader-events} thread
	 */
	public LeaderEngine(CoordinationStore store, LeaseSettings settings, NodeRegistration node,
			Collection<String> groups, Consumer<Object> publisher) {
		this(store, settings, node, groups, publisher, MonotonicClock.SYSTEM);
	}

	LeaderEngine(CoordinationStore store, LeaseSettings settings, NodeRegistration node, Collection<String> groups,
			Consumer<Object> publisher, MonotonicClock clock) {
		this.store = store;
		this.settings = settings;
		this.watchdog = new SafeWindowWatchdog(this.threads);
		this.events = new OrderedEvents(this.threads, "leader-events", "Leader node " + node.id(), this::deliver);
		this.groups = new GroupLeases(node.id(), settings, clock, this.watchdog, this.events, publisher,
				this::acquireAfterRelease);
		this.roundTrips = new RoundTrips(store, settings, clock, node, this.groups, this.threads);
		this.handOver = new ReleaseHandOver(store, node, settings, clock, this.groups, this.roundTrips, this.events);
		groups.forEach(this::addGroup);
	}

	@Override
	public void addGroup(String group) {
		Names.requireValid("group name", group);
		this.groups.add(group);
	}

	/**
	 * Sets the registry on which acquire attempts and heartbeat round trips are observed;
	 * none by default. Call it before {@link #start()}.
	 * @param observationRegistry the registry
	 */
	public void setObservationRegistry(ObservationRegistry observationRegistry) {
		this.roundTrips.setObservationRegistry(observationRegistry);
	}

	@Override
	public void setMonitor(LeaseMonitor monitor) {
		this.groups.setMonitor(monitor);
	}

	@Override
	public void advertiseDaemons(Set<String> daemons) {
		this.roundTrips.advertiseDaemons(daemons);
	}

	@Override
	public void advertiseAddress(@Nullable String baseUrl, @Nullable String zone) {
		this.roundTrips.advertiseAddress(baseUrl, zone);
	}

	/**
	 * Starts heartbeating and taking part in the election. Returns at once; the first
	 * round trip runs on the {@code leader-io} thread. An engine that was stopped starts
	 * again like a new one, with new threads: it registers the node again and competes
	 * for every group, and a lease it wins carries a new term.
	 */
	public void start() {
		this.threadsLock.lock();
		try {
			if (this.roundTrips.isRunning()) {
				return;
			}
			this.roundTrips.prepareStart();
			this.releaseSubscription = this.store.listen(new CoordinationStore.ReleaseListener() {

				@Override
				public void released(String group, @Nullable String successor) {
					LeaderEngine.this.handOver.onReleased(group, successor);
				}

				@Override
				public void handedOver(String group, String node, long term) {
					LeaderEngine.this.handOver.onHandedOver(group, node, term);
				}

				@Override
				public void sessionLost(Map<String, Long> terms) {
					LeaderEngine.this.groups.stepDownTerms(terms, RevokeReason.SESSION_LOST);
				}

				@Override
				public void nodeSessionLost() {
					LeaderEngine.this.sessionLostAt = System.nanoTime();
					LeaderEngine.this.sessionsLost.incrementAndGet();
					for (Runnable action : LeaderEngine.this.sessionLostActions) {
						try {
							action.run();
						}
						catch (RuntimeException ex) {
							logger.warn("Leader node " + nodeId() + ": an action on the loss of its session failed",
									ex);
						}
					}
				}

			});
			// Start the other threads now rather than with their first task, which is a
			// grant's or a revoke's.
			this.watchdog.start();
			this.events.start();
			this.roundTrips.firstTick();
			GroupLeases.info("Leader node %s started for groups %s", nodeId(), groups());
		}
		finally {
			this.threadsLock.unlock();
		}
	}

	/**
	 * Stops: ends every leadership of this node with reason
	 * {@link RevokeReason#SHUTDOWN}, releases the leases so that other nodes take over at
	 * once, deregisters the node, gives back the connections the store keeps for the
	 * round trips and for notifications ({@link CoordinationStore#disconnect()}),
	 * delivers the remaining events, and ends the engine's threads. Blocks for at most a
	 * few seconds. The engine can be {@linkplain #start() started} again.
	 */
	public void stop() {
		if (!this.roundTrips.markStopped()) {
			return;
		}
		this.threadsLock.lock();
		try {
			if (!this.handOver.shutdown()) {
				logger.warn("Leader node " + nodeId() + " could not release its leases: a round trip in "
						+ "flight did not end within 10 s");
				this.groups.stepDown(null, RevokeReason.SHUTDOWN);
			}
			// After the release: the store may bind leases to the session it listens on,
			// which must outlast the leadership it binds (a stopped engine acquires
			// nothing on a wake-up).
			closeQuietly(this.releaseSubscription);
			this.releaseSubscription = null;
			this.roundTrips.stop();
			// After the last round trip, so that nothing takes the store's connection
			// again.
			this.store.disconnect();
			this.watchdog.stop();
			this.events.stop();
			this.threads.awaitEnd();
		}
		finally {
			this.threadsLock.unlock();
		}
	}

	/**
	 * Gives up leadership ahead of a {@link #stop()}: ends every leadership of this node
	 * with reason {@link RevokeReason#SHUTDOWN} and releases the leases, so that other
	 * nodes take over at once, while the node stays registered and heartbeats on, for its
	 * daemons to drain on a live node. Asks for no lease until the engine is started
	 * again. Does nothing on an engine that is not running. Blocks until the leases are
	 * released.
	 */
	public void relinquish() {
		if (isRunning()) {
			this.handOver.relinquish();
		}
	}

	/**
	 * Returns whether the engine is running.
	 * @return whether it runs
	 */
	public boolean isRunning() {
		return this.roundTrips.isRunning();
	}

	@Override
	public String nodeId() {
		return this.roundTrips.node().id();
	}

	@Override
	public Set<String> groups() {
		return this.groups.names();
	}

	@Override
	public boolean isLeader(String group) {
		return this.groups.get(group).isLeader();
	}

	@Override
	public Optional<FencingToken> token(String group) {
		return this.groups.get(group).token();
	}

	@Override
	public Optional<LeaderInfo> leader(String group) {
		LeaseState view = this.groups.get(group).view();
		if (view == null || !view.isHeld()) {
			return Optional.empty();
		}
		return Optional.of(new LeaderInfo(group, view.holder(), view.term(), view.expiresAt()));
	}

	@Override
	public boolean yield(String group) {
		GroupLease target = this.groups.get(group);
		try {
			return this.handOver.yield(target);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return false;
		}
		catch (ExecutionException ex) {
			throw new IllegalStateException("Could not yield group '" + group + "'", ex.getCause());
		}
	}

	@Override
	public boolean awaitLeadership(String group, Duration timeout) throws InterruptedException {
		GroupLease target = this.groups.get(group);
		long deadline = System.nanoTime() + timeout.toNanos();
		synchronized (target) {
			while (!target.isLeader()) {
				long left = deadline - System.nanoTime();
				if (left <= 0) {
					return false;
				}
				TimeUnit.NANOSECONDS.timedWait(target, left);
			}
			return true;
		}
	}

	@Override
	public Registration addListener(String group, LeadershipListener listener) {
		GroupLease target = this.groups.get(group);
		target.listeners().add(listener);
		return () -> target.listeners().remove(listener);
	}

	@Override
	public List<NodeInfo> members() {
		return this.groups.members();
	}

	@Override
	public Optional<LeaseState> lease(String group) {
		return Optional.ofNullable(this.groups.get(group).view());
	}

	@Override
	public Optional<Duration> safeWindowRemaining(String group) {
		return this.groups.get(group).safeWindowRemaining();
	}

	@Override
	public Optional<Duration> sinceLastHeartbeat() {
		return this.roundTrips.sinceLastHeartbeat();
	}

	@Override
	public long sessionsLost() {
		return this.sessionsLost.get();
	}

	@Override
	public boolean sessionLostSince(long nanoTime) {
		return this.sessionsLost.get() > 0 && this.sessionLostAt - nanoTime >= 0;
	}

	@Override
	public void onSessionLost(Runnable action) {
		this.sessionLostActions.add(action);
	}

	@Override
	public LeaseSettings settings() {
		return this.settings;
	}

	@Override
	public long databaseClockSteps() {
		return this.roundTrips.databaseClockSteps();
	}

	private void deliver(Object event) {
		this.groups.deliver(event);
	}

	private void acquireAfterRelease(GroupLease group) {
		this.roundTrips.attemptAcquire(group);
	}

	private static void closeQuietly(@Nullable AutoCloseable closeable) {
		if (closeable != null) {
			try {
				closeable.close();
			}
			catch (Exception ex) {
				logger.debug("Could not stop release notifications: " + ex);
			}
		}
	}

}
