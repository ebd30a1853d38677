package dev.leader.lease;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

import dev.leader.FencingToken;
import dev.leader.LeaderChangedEvent;
import dev.leader.LeaderInfo;
import dev.leader.Leadership;
import dev.leader.LeadershipGrantedEvent;
import dev.leader.LeadershipRevokedEvent;
import dev.leader.NodeInfo;
import dev.leader.RevokeReason;
import dev.leader.actuate.LeaderMeters;
import dev.leader.lease.CoordinationStore.AcquireResult;
import dev.leader.lease.CoordinationStore.Tick;
import dev.leader.node.Membership;
import dev.leader.node.Names;
import dev.leader.node.NodeRegistration;
import dev.leader.node.OwnThreads;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.dao.DuplicateKeyException;

/**
 * Lease-based leader election for a set of groups, plus this node's membership heartbeat. Usable without a Spring
 * context: construct it with a store, call {@link #start()}, and {@link #stop()} to release. A stopped engine holds no
 * thread and no connection, and can be started again (a context's {@code stop()} and {@code start()}, a CRaC
 * checkpoint and restore).
 * <p>
 * <b>Guarantees.</b> Never more than one leader per group and term (the coordinator grants a lease to one node at a
 * time and raises the term on every new holder); sometimes briefly none, for at most the remaining lease after a
 * crash. A node believes it leads only inside its safe window, measured on {@link System#nanoTime()} from the moment
 * the successful acquire or renewal was <em>sent</em>, for the lease duration minus the safety margin. The watchdog
 * closes the window on its own thread, so a node steps down on time even while its round trip to the coordinator
 * hangs. Every grant is followed by exactly one revoke of the same term.
 * <p>
 * <b>Timing.</b> One round trip per renew interval heartbeats the node, renews every lease it holds and reads every
 * group's lease and the member list. A follower attempts to acquire only when the lease it read expires (in the
 * coordinator's time, converted to a local deadline that is never early) or when the store wakes it after a
 * release, so a crashed leader is replaced within the lease duration and a stopping one at once.
 * <p>
 * <b>Threads.</b> Round trips run one at a time, each with the state change it leads to: on {@code leader-io}, or,
 * to spare a hand-over a thread hand-off, on the thread that calls {@link #stop()} and on the thread that delivers a
 * release notification, when no round trip is under way. {@code leader-watchdog} closes safe windows, and
 * {@code leader-events} delivers events in order; a failing listener is logged and delivery goes on.
 * <p>
 * <b>Observability.</b> Every acquire attempt and every heartbeat round trip is a Micrometer {@link Observation}
 * ({@link LeaderMeters#ACQUIRE}, {@link LeaderMeters#HEARTBEAT}) on the registry given to
 * {@link #setObservationRegistry(ObservationRegistry)}, and a {@link LeaseMonitor} receives the time groups go
 * without a leader. Each transition is logged once at INFO with group, node, action, term and latency; the
 * steady-state round trip only at DEBUG.
 */
public final class LeaderEngine implements Leadership {

	private static final Log logger = LogFactory.getLog(LeaderEngine.class);

	private static final long MAX_JITTER_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

	private static final long MIN_RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

	private static final Duration REVOKE_DELIVERY_TIMEOUT = Duration.ofSeconds(1);

	/**
	 * How long a follower waits before it acquires a released lease when the store named another node to try first.
	 */
	private static final long RELEASE_STAGGER_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

	private static final Runnable NOTHING = () -> {
	};

	private static final String GROUP = LeaderMeters.Tag.GROUP.getKey();

	private static final String OUTCOME = LeaderMeters.Tag.OUTCOME.getKey();

	private static final String ROLE = LeaderMeters.Tag.ROLE.getKey();

	private final CoordinationStore store;

	private final LeaseSettings settings;

	private volatile NodeRegistration node;

	private final Consumer<Object> publisher;

	private final Map<String, Group> groups = new ConcurrentHashMap<>();

	private final Membership membership = new Membership();

	private final Object lock = new Object();

	/**
	 * Held for every round trip and the state change that follows it, so that they run one at a time whichever
	 * thread makes them; taken before {@link #lock}.
	 */
	private final ReentrantLock roundTrips = new ReentrantLock();

	/**
	 * Held while the threads are created or torn down, so that a start waits until those of the previous run are
	 * gone.
	 */
	private final ReentrantLock threadsLock = new ReentrantLock();

	// Replaced when the engine starts again: a stop shuts them down, so that a stopped engine leaves no thread behind.

	private volatile ScheduledExecutorService io;

	private volatile ScheduledExecutorService watchdog;

	private volatile ExecutorService events;

	private final OwnThreads threads = new OwnThreads();

	private volatile boolean running;

	/**
	 * The local monotonic instant at which the last heartbeat that succeeded was sent. The database wrote that
	 * heartbeat no earlier, so it cannot count this node dead before this instant plus the node expiry, however long
	 * the reply took.
	 */
	private volatile long lastHeartbeatSent;

	private volatile boolean heartbeated;

	// Whether the last heartbeat found this node's id registered by another live process, and whether one since the
	// start registered this process: it asks for no lease before. Both with roundTrips held.
	private boolean duplicate;

	private boolean registered;

	// The database time of this node's last heartbeat and the local instant it was sent; with roundTrips held.
	private @Nullable Instant lastDatabaseTime;

	private long lastDatabaseTimeSent;

	private final AtomicLong databaseClockSteps = new AtomicLong();

	private @Nullable ScheduledFuture<?> nextTick;

	private @Nullable AutoCloseable releaseSubscription;

	private volatile ObservationRegistry observationRegistry = ObservationRegistry.NOOP;

	private volatile LeaseMonitor monitor = LeaseMonitor.NONE;


	/**
	 * Creates an engine.
	 * @param store the coordination store
	 * @param settings the timing
	 * @param node this node's registration
	 * @param groups the groups to take part in, more can be added with {@link #addGroup(String)}
	 * @param publisher receives every event, on the {@code leader-events} thread
	 */
	public LeaderEngine(CoordinationStore store, LeaseSettings settings, NodeRegistration node,
			Collection<String> groups, Consumer<Object> publisher) {
		this.store = store;
		this.settings = settings;
		this.node = node;
		this.publisher = publisher;
		groups.forEach(this::addGroup);
		createThreads();
		// A JVM links a lambda the first time it creates it, and a node releases on a hand-over's path, often once in
		// its life: link it now, as the tasks of each group are.
		releaseOnce(Map.of(), new AtomicBoolean(true));
	}

	/**
	 * Adds a group to take part in; a group added while running joins the election on the next round trip.
	 * @param group the group name
	 * @throws IllegalArgumentException if the name is invalid
	 */
	public void addGroup(String group) {
		Names.requireValid("group name", group);
		this.groups.computeIfAbsent(group, Group::new);
	}

	/**
	 * Sets the registry on which acquire attempts and heartbeat round trips are observed; none by default. Call it
	 * before {@link #start()}.
	 * @param observationRegistry the registry
	 */
	public void setObservationRegistry(ObservationRegistry observationRegistry) {
		this.observationRegistry = observationRegistry;
	}

	/**
	 * Sets the monitor that receives measurements for metrics; none by default. Call it before {@link #start()}.
	 * @param monitor the monitor
	 */
	public void setMonitor(LeaseMonitor monitor) {
		this.monitor = monitor;
	}

	/**
	 * Sets the daemons this node advertises; the next heartbeat writes them.
	 * @param daemons the daemons this node can run
	 */
	public void advertiseDaemons(Set<String> daemons) {
		this.node = this.node.withDaemons(daemons);
	}

	/**
	 * Starts heartbeating and taking part in the election. Returns at once; the first round trip runs on the
	 * {@code leader-io} thread. An engine that was stopped starts again like a new one, with new threads: it
	 * registers the node again and competes for every group, and a lease it wins carries a new term.
	 */
	public void start() {
		this.threadsLock.lock();
		try {
			if (this.running) {
				return;
			}
			if (this.io.isShutdown()) {
				createThreads();
			}
			// The stop deregistered the node: it registers again before it asks for a lease.
			this.roundTrips.lock();
			try {
				this.registered = false;
			}
			finally {
				this.roundTrips.unlock();
			}
			synchronized (this.lock) {
				this.running = true;
			}
			this.releaseSubscription = this.store.listen(this::onReleased);
			// Start the other threads now rather than with their first task, which is a grant's or a revoke's.
			this.watchdog.execute(NOTHING);
			this.events.execute(NOTHING);
			this.io.execute(this::tick);
			info("Leader node %s started for groups %s", this.node.id(), groups());
		}
		finally {
			this.threadsLock.unlock();
		}
	}

	/**
	 * Stops: ends every leadership of this node with reason {@link RevokeReason#SHUTDOWN}, releases the leases so that
	 * other nodes take over at once, deregisters the node, gives back the connections the store keeps for the round
	 * trips and for notifications ({@link CoordinationStore#disconnect()}), delivers the remaining events, and ends
	 * the engine's threads. Blocks for at most a few seconds. The engine can be {@linkplain #start() started} again.
	 */
	public void stop() {
		synchronized (this.lock) {
			if (!this.running) {
				return;
			}
			this.running = false;
		}
		this.threadsLock.lock();
		try {
			closeQuietly(this.releaseSubscription);
			this.releaseSubscription = null;
			if (!shutdown()) {
				logger.warn("Leader node " + this.node.id() + " could not release its leases: a round trip in "
						+ "flight did not end within 10 s");
				synchronized (this.lock) {
					this.groups.values().forEach((group) -> stepDown(group, RevokeReason.SHUTDOWN, -1));
				}
			}
			this.io.shutdownNow();
			awaitTermination(this.io);
			// After the last round trip, so that nothing takes the store's connection again.
			this.store.disconnect();
			this.watchdog.shutdownNow();
			this.events.shutdown();
			this.threads.awaitEnd();
		}
		finally {
			this.threadsLock.unlock();
		}
	}

	/**
	 * Returns whether the engine is running.
	 * @return whether it runs
	 */
	public boolean isRunning() {
		return this.running;
	}

	@Override
	public String nodeId() {
		return this.node.id();
	}

	@Override
	public Set<String> groups() {
		return new TreeSet<>(this.groups.keySet());
	}

	@Override
	public boolean isLeader(String group) {
		Holding holding = group(group).holding;
		return holding != null && System.nanoTime() - holding.safeUntil < 0;
	}

	@Override
	public Optional<FencingToken> token(String group) {
		Holding holding = group(group).holding;
		if (holding == null || System.nanoTime() - holding.safeUntil >= 0) {
			return Optional.empty();
		}
		return Optional.of(new FencingToken(group, holding.term));
	}

	@Override
	public Optional<LeaderInfo> leader(String group) {
		LeaseState view = group(group).view;
		if (view == null || !view.isHeld()) {
			return Optional.empty();
		}
		return Optional.of(new LeaderInfo(group, view.holder(), view.term(), view.expiresAt()));
	}

	@Override
	public boolean yield(String group) {
		Group target = group(group);
		Future<Boolean> result = this.io.submit(() -> yieldOnIoThread(target));
		try {
			return result.get();
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
		Group target = group(group);
		long deadline = System.nanoTime() + timeout.toNanos();
		synchronized (target) {
			while (!isLeader(group)) {
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
		Group target = group(group);
		target.listeners.add(listener);
		return () -> target.listeners.remove(listener);
	}

	/**
	 * Returns the members as last read.
	 * @return the members
	 */
	public List<NodeInfo> members() {
		return this.membership.members();
	}

	/**
	 * Returns the lease of a group as last read by this node.
	 * @param group the group
	 * @return the lease, or empty if none was read yet
	 */
	public Optional<LeaseState> lease(String group) {
		return Optional.ofNullable(group(group).view);
	}

	/**
	 * Returns the time left in this node's safe window for the group, on the local monotonic clock: the node steps
	 * down when it runs out without a renewal.
	 * @param group the group
	 * @return the time left, or empty when this node does not lead the group
	 */
	public Optional<Duration> safeWindowRemaining(String group) {
		Holding holding = group(group).holding;
		long left = (holding != null) ? holding.safeUntil - System.nanoTime() : 0;
		return (left > 0) ? Optional.of(Duration.ofNanos(left)) : Optional.empty();
	}

	/**
	 * Returns how long ago, on the local monotonic clock, this node sent the last heartbeat that succeeded. The time
	 * counts from the send, not the reply, as the safe window does: the coordinator wrote the heartbeat no earlier,
	 * so it cannot have counted this node dead before this time reaches the node expiry, however long the reply took.
	 * @return the time since that heartbeat was sent, or empty if no heartbeat has succeeded yet
	 */
	public Optional<Duration> sinceLastHeartbeat() {
		return this.heartbeated ? Optional.of(Duration.ofNanos(System.nanoTime() - this.lastHeartbeatSent))
				: Optional.empty();
	}

	/**
	 * Returns the settings.
	 * @return the settings
	 */
	public LeaseSettings settings() {
		return this.settings;
	}

	private void createThreads() {
		this.io = Executors.newSingleThreadScheduledExecutor(this.threads.named("leader-io"));
		this.watchdog = Executors.newSingleThreadScheduledExecutor(this.threads.named("leader-watchdog"));
		this.events = Executors.newSingleThreadExecutor(this.threads.named("leader-events"));
	}

	private Group group(String name) {
		Group group = this.groups.get(name);
		if (group == null) {
			throw new IllegalArgumentException("Unknown leader group '" + name + "'; this node takes part in "
					+ groups() + ". Add it to leader.groups or name it in a @LeaderOnly annotation");
		}
		return group;
	}

	// Everything below makes round trips with roundTrips held (see Threads above), usually on leader-io, unless
	// stated otherwise.

	private void tick() {
		this.roundTrips.lock();
		try {
			if (this.running) {
				heartbeat();
			}
		}
		finally {
			this.roundTrips.unlock();
		}
	}

	private void heartbeat() {
		Map<String, Long> held = heldTerms();
		Observation observation = observe(LeaderMeters.HEARTBEAT).lowCardinalityKeyValue(ROLE,
				held.isEmpty() ? "follower" : "leader");
		long sent = System.nanoTime();
		Tick tick;
		try (Observation.Scope scope = observation.start().openScope()) {
			tick = this.store.tick(this.node, held, this.groups.keySet(), this.settings.duration(),
					this.settings.nodeExpiry());
		}
		catch (DuplicateKeyException ex) {
			// Another live process has this node's id: whatever it holds is its own, so nothing is held here.
			observation.lowCardinalityKeyValue(OUTCOME, "error").error(ex).stop();
			if (!this.duplicate) {
				this.duplicate = true;
				logger.error(ex.getMessage());
			}
			this.registered = false;
			synchronized (this.lock) {
				held.keySet().forEach((name) -> stepDown(this.groups.get(name), RevokeReason.ERROR, -1));
			}
			scheduleTick(this.settings.renewInterval().toNanos());
			return;
		}
		catch (RuntimeException ex) {
			observation.lowCardinalityKeyValue(OUTCOME, "error").error(ex).stop();
			onRoundTripFailure("heartbeat", held.keySet(), ex);
			scheduleTick(this.settings.retryInterval().toNanos());
			return;
		}
		this.registered = true;
		if (this.duplicate) {
			this.duplicate = false;
			info("Leader node %s registered: the other process with its id has gone silent", this.node.id());
		}
		long received = System.nanoTime();
		observation
			.lowCardinalityKeyValue(OUTCOME, tick.renewed().keySet().containsAll(held.keySet()) ? "success" : "lost")
			.stop();
		checkDatabaseClock(tick, sent, received);
		this.lastHeartbeatSent = sent;
		this.heartbeated = true;
		if (logger.isDebugEnabled()) {
			logger.debug(String.format("Leader node %s heartbeat renewed=%s in %d ms", this.node.id(),
					tick.renewed().keySet(), TimeUnit.NANOSECONDS.toMillis(received - sent)));
		}
		List<Group> candidates = new ArrayList<>();
		synchronized (this.lock) {
			held.forEach((name, term) -> applyRenewal(this.groups.get(name), term, sent, received - sent,
					tick.renewed().get(name), tick.leases().get(name)));
			this.membership.update(tick.members()).forEach(this::publish);
			for (Group group : this.groups.values()) {
				LeaseState renewed = tick.renewed().get(group.name);
				observe(group, (renewed != null) ? renewed : tick.leases().get(group.name), received);
				if (group.holding == null) {
					candidates.add(group);
				}
			}
		}
		for (Group group : candidates) {
			considerAcquiring(group, received);
		}
		scheduleTick(sent + this.settings.renewInterval().toNanos() - System.nanoTime());
	}

	/**
	 * Compares how far the database clock advanced between this heartbeat and the one before with how far this
	 * node's monotonic clock did. The database read its clock for each heartbeat between its send and its reply, so
	 * it cannot honestly have advanced by more than the time from the earlier send to this reply; more than that by
	 * over the safety margin is a forward step of the database clock, which ends leases early while their holders
	 * still count on them.
	 */
	private void checkDatabaseClock(Tick tick, long sent, long received) {
		Instant databaseTime = null;
		for (NodeInfo member : tick.members()) {
			if (member.id().equals(this.node.id())) {
				databaseTime = member.heartbeatAt();
			}
		}
		if (databaseTime == null) {
			return;
		}
		Instant previous = this.lastDatabaseTime;
		long previousSent = this.lastDatabaseTimeSent;
		this.lastDatabaseTime = databaseTime;
		this.lastDatabaseTimeSent = sent;
		if (previous == null) {
			return;
		}
		long advanced = Duration.between(previous, databaseTime).toNanos();
		long elapsed = received - previousSent;
		if (advanced - elapsed > this.settings.safetyMargin().toNanos()) {
			this.databaseClockSteps.incrementAndGet();
			logger.warn(String.format("Leader node %s saw the database clock step forward: it advanced %d ms between "
					+ "two heartbeats, while at most %d ms passed on this node. Leases are timed by the database clock "
					+ "and may have ended up to %d ms early, while their holders still counted on them; keep the "
					+ "database server's clock slewed, never stepped (for example chrony with makestep off)",
					this.node.id(), TimeUnit.NANOSECONDS.toMillis(advanced), TimeUnit.NANOSECONDS.toMillis(elapsed),
					TimeUnit.NANOSECONDS.toMillis(advanced - elapsed)));
		}
	}

	/**
	 * Returns how often this node saw the database clock step forward by more than the safety margin between two
	 * heartbeats.
	 * @return the number of steps seen since the engine was created
	 */
	public long databaseClockSteps() {
		return this.databaseClockSteps.get();
	}

	private void applyRenewal(Group group, long term, long sent, long latency, @Nullable LeaseState renewed,
			@Nullable LeaseState before) {
		Holding holding = group.holding;
		if (holding == null || holding.term != term) {
			return; // the watchdog closed the window while the renewal was in flight
		}
		if (renewed != null) {
			group.renewFailed = false;
			hold(group, term, sent);
			return;
		}
		RevokeReason reason;
		if (before == null || before.holder() == null) {
			reason = RevokeReason.RELEASED;
		}
		else if (this.node.id().equals(before.holder()) && before.term() == term) {
			reason = RevokeReason.EXPIRED;
		}
		else {
			reason = RevokeReason.LOST;
		}
		stepDown(group, reason, latency);
	}

	private void considerAcquiring(Group group, long readAt) {
		LeaseState view = group.view;
		// A lease still valid under this node's id is one it stepped down from locally: acquiring it again grants
		// the next term, never the one already revoked.
		if (view == null || !view.isHeld() || this.node.id().equals(view.holder())) {
			attemptAcquire(group);
		}
		else {
			scheduleWake(group, readAt + view.remaining().toNanos() + jitter() - System.nanoTime());
		}
	}

	private void attemptAcquire(Group group) {
		this.roundTrips.lock();
		try {
			if (this.running && this.registered && group.holding == null) {
				acquire(group);
			}
		}
		finally {
			this.roundTrips.unlock();
		}
	}

	private void acquire(Group group) {
		long cooling = group.cooldownUntil - System.nanoTime();
		if (cooling > 0) {
			scheduleWake(group, cooling);
			return;
		}
		Observation observation = observe(LeaderMeters.ACQUIRE).lowCardinalityKeyValue(GROUP, group.name);
		long sent = System.nanoTime();
		AcquireResult result;
		try (Observation.Scope scope = observation.start().openScope()) {
			result = this.store.acquire(group.name, this.node.id(), this.settings.duration());
		}
		catch (RuntimeException ex) {
			observation.lowCardinalityKeyValue(OUTCOME, "error").error(ex).stop();
			onRoundTripFailure("acquire " + group.name, Set.of(), ex);
			scheduleWake(group, this.settings.retryInterval().toNanos());
			return;
		}
		long received = System.nanoTime();
		observation.lowCardinalityKeyValue(OUTCOME, result.granted() ? "granted" : "refused").stop();
		LeaseState lease = result.lease();
		synchronized (this.lock) {
			if (result.granted() && lease != null) {
				hold(group, lease.term(), sent);
				publish(new LeadershipGrantedEvent(group.name, lease.term(), this.node.id()));
				info("Leader group=%s node=%s action=granted term=%d latency=%dms", group.name,
						this.node.id(), lease.term(), TimeUnit.NANOSECONDS.toMillis(received - sent));
				synchronized (group) {
					group.notifyAll();
				}
			}
			observe(group, lease, received);
		}
		if (!result.granted()) {
			long wait = (lease != null && lease.isHeld()) ? lease.remaining().toNanos() + jitter()
					: this.settings.retryInterval().toNanos();
			scheduleWake(group, received + wait - System.nanoTime());
		}
	}

	private boolean yieldOnIoThread(Group group) {
		this.roundTrips.lock();
		try {
			Holding holding;
			synchronized (this.lock) {
				holding = group.holding;
				if (holding == null) {
					return false;
				}
				group.cooldownUntil = System.nanoTime() + this.settings.yieldCooldown().toNanos();
				stepDown(group, RevokeReason.YIELDED, -1);
			}
			long sent = System.nanoTime();
			releaseAfterRevokes(Map.of(group.name, holding.term));
			if (logger.isDebugEnabled()) {
				logger.debug(String.format("Leader group=%s node=%s action=released term=%d latency=%dms", group.name,
						this.node.id(), holding.term, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sent)));
			}
			scheduleWake(group, this.settings.yieldCooldown().toNanos());
			return true;
		}
		finally {
			this.roundTrips.unlock();
		}
	}

	/**
	 * Ends every leadership, releases the leases and deregisters, on the calling thread once no round trip is under
	 * way, which spares a stopping leader's hand-over the wake-up of {@code leader-io}.
	 * @return whether it could, that is, whether a round trip in flight ended within 10 s
	 */
	private boolean shutdown() {
		try {
			if (!this.roundTrips.tryLock(10, TimeUnit.SECONDS)) {
				return false;
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return false;
		}
		try {
			cancel(this.nextTick);
			Map<String, Long> held;
			synchronized (this.lock) {
				held = heldTerms();
				for (Group group : this.groups.values()) {
					cancel(group.wake);
					stepDown(group, RevokeReason.SHUTDOWN, -1);
				}
			}
			releaseAfterRevokes(held);
			try {
				this.store.deregister(this.node.id());
			}
			catch (RuntimeException ex) {
				logger.warn("Leader node " + this.node.id() + " could not deregister: " + ex);
			}
			info("Leader node %s stopped, released %s", this.node.id(), held.keySet());
			return true;
		}
		finally {
			this.roundTrips.unlock();
		}
	}

	/**
	 * Releases the leases once the revoked events published so far have reached their listeners, so that running
	 * {@code @LeaderOnly} calls are interrupted before another node can be granted a lease. The release runs on
	 * {@code leader-events} right after those deliveries, which spares the hand-over a thread hand-off. If they take
	 * longer than {@link #REVOKE_DELIVERY_TIMEOUT} (a listener that blocks, or one that stops the engine on that
	 * thread), this thread releases instead. Returns once the release is done.
	 */
	private void releaseAfterRevokes(Map<String, Long> held) {
		if (held.isEmpty()) {
			return;
		}
		AtomicBoolean taken = new AtomicBoolean();
		Runnable release = releaseOnce(held, taken);
		Future<?> released;
		try {
			released = this.events.submit(release);
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
				logger.warn("Leader node " + this.node.id() + " releases " + held.keySet()
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
	 * Returns a task that releases the leases unless the flag shows that another thread took them over.
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
			this.store.release(this.node.id(), held);
		}
		catch (RuntimeException ex) {
			logger.warn("Leader node " + this.node.id() + " could not release " + held.keySet()
					+ "; other nodes take over when the lease expires: " + ex);
		}
	}

	/**
	 * Acquires a released lease: at once if the store named this node, or none, to try first, on the notifying thread
	 * unless a round trip is under way; otherwise after {@link #RELEASE_STAGGER_NANOS}, so that the successor's acquire
	 * neither queues behind this node's on the lease's row nor competes with it for the machine.
	 */
	private void onReleased(String name, @Nullable String successor) {
		Group group = this.groups.get(name);
		if (group != null && this.running) {
			if (successor == null || successor.equals(this.node.id())) {
				if (this.roundTrips.tryLock()) {
					try {
						attemptAcquire(group);
					}
					finally {
						this.roundTrips.unlock();
					}
				}
				else {
					this.io.execute(group.acquireAfterRelease);
				}
			}
			else {
				this.io.schedule(group.acquireAfterRelease, RELEASE_STAGGER_NANOS, TimeUnit.NANOSECONDS);
			}
		}
	}

	private void onRoundTripFailure(String what, Collection<String> held, RuntimeException ex) {
		synchronized (this.lock) {
			held.forEach((name) -> this.groups.get(name).renewFailed = true);
		}
		if (held.isEmpty()) {
			logger.debug("Leader node " + this.node.id() + " " + what + " failed: " + ex);
		}
		else {
			logger.warn("Leader node " + this.node.id() + " could not renew " + held
					+ "; retrying inside the safe window: " + ex);
		}
	}

	private void scheduleTick(long delayNanos) {
		if (this.running) {
			cancel(this.nextTick);
			this.nextTick = this.io.schedule(this::tick, Math.max(delayNanos, 0), TimeUnit.NANOSECONDS);
		}
	}

	private void scheduleWake(Group group, long delayNanos) {
		if (this.running) {
			cancel(group.wake);
			group.wake = this.io.schedule(() -> attemptAcquire(group), Math.max(delayNanos, MIN_RETRY_NANOS),
					TimeUnit.NANOSECONDS);
		}
	}

	// Called with the lock held.

	private void hold(Group group, long term, long sent) {
		Holding holding = new Holding(term, sent + this.settings.safeWindow().toNanos());
		group.holding = holding;
		cancel(group.expiry);
		group.expiry = this.watchdog.schedule(group.windowCloser, holding.safeUntil - System.nanoTime(),
				TimeUnit.NANOSECONDS);
	}

	/**
	 * Ends this node's leadership of the group, if it holds it.
	 * @param latency the round trip that found the lease lost, in nanoseconds, or -1 for a local decision
	 */
	private void stepDown(Group group, RevokeReason reason, long latency) {
		Holding holding = group.holding;
		if (holding == null) {
			return;
		}
		group.holding = null;
		cancel(group.expiry);
		publish(new LeadershipRevokedEvent(group.name, holding.term, this.node.id(), reason));
		info("Leader group=%s node=%s action=revoked term=%d reason=%s latency=%s", group.name,
				this.node.id(), holding.term, reason,
				(latency >= 0) ? TimeUnit.NANOSECONDS.toMillis(latency) + "ms" : "local");
	}

	private void observe(Group group, @Nullable LeaseState lease, long readAt) {
		if (lease == null) {
			return;
		}
		LeaseState before = group.view;
		group.view = lease;
		if (before != null && lease.isHeld() && lease.term() != before.term()) {
			leaderless(group.name, Duration.ofNanos(Math.max(readAt - group.previousLeaseEnd, 0)));
		}
		group.previousLeaseEnd = readAt + lease.remaining().toNanos();
		String holderBefore = (before != null && before.isHeld()) ? before.holder() : null;
		String holderNow = lease.isHeld() ? lease.holder() : null;
		if (!Objects.equals(holderBefore, holderNow) || (holderNow != null && before.term() != lease.term())) {
			publish(new LeaderChangedEvent(group.name, holderNow, lease.term(),
					(holderNow != null) ? lease.expiresAt() : null));
		}
	}

	private void leaderless(String group, Duration duration) {
		try {
			this.monitor.leaderless(group, duration);
		}
		catch (RuntimeException ex) {
			logger.warn("Lease monitor failed; the engine carries on", ex);
		}
	}

	private Observation observe(LeaderMeters meter) {
		return Observation.createNotStarted(meter.getName(), this.observationRegistry);
	}

	private Map<String, Long> heldTerms() {
		Map<String, Long> held = new LinkedHashMap<>();
		this.groups.values().forEach((group) -> {
			Holding holding = group.holding;
			if (holding != null) {
				held.put(group.name, holding.term);
			}
		});
		return held;
	}

	private void publish(Object event) {
		try {
			this.events.execute(() -> deliver(event));
		}
		catch (RejectedExecutionException ex) {
			logger.warn("Leader node " + this.node.id() + " stopped before it could publish " + event);
		}
	}

	// Runs on the leader-watchdog thread.

	/**
	 * Steps down if the safe window of the lease held now has closed. A closer scheduled for an earlier window of the
	 * group, which a renewal replaced while it was starting, finds the renewed window open and leaves it.
	 */
	private void closeWindow(Group group) {
		synchronized (this.lock) {
			Holding holding = group.holding;
			if (holding != null && System.nanoTime() - holding.safeUntil >= 0) {
				stepDown(group, group.renewFailed ? RevokeReason.ERROR : RevokeReason.EXPIRED, -1);
			}
		}
	}

	// Runs on the leader-events thread.

	private void deliver(Object event) {
		// Loops rather than lambdas: this runs once per transition, often for the first time in the JVM.
		if (event instanceof LeadershipGrantedEvent granted) {
			for (LeadershipListener listener : this.groups.get(granted.group()).listeners) {
				try {
					listener.granted(granted);
				}
				catch (Throwable ex) {
					listenerFailed(ex);
				}
			}
		}
		else if (event instanceof LeadershipRevokedEvent revoked) {
			for (LeadershipListener listener : this.groups.get(revoked.group()).listeners) {
				try {
					listener.revoked(revoked);
				}
				catch (Throwable ex) {
					listenerFailed(ex);
				}
			}
		}
		try {
			this.publisher.accept(event);
		}
		catch (Throwable ex) {
			listenerFailed(ex);
		}
	}

	/**
	 * Logs a line at INFO, formatting it only if INFO is on: transitions are logged on a hand-over's path.
	 */
	private static void info(String format, Object... args) {
		if (logger.isInfoEnabled()) {
			logger.info(String.format(format, args));
		}
	}

	private static void listenerFailed(Throwable ex) {
		logger.error("Leadership listener failed; the engine carries on", ex);
	}

	private static long jitter() {
		return ThreadLocalRandom.current().nextLong(MAX_JITTER_NANOS);
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

	private static void awaitTermination(ExecutorService executor) {
		try {
			executor.awaitTermination(5, TimeUnit.SECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	private static void cancel(@Nullable Future<?> future) {
		if (future != null) {
			future.cancel(false);
		}
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

	/**
	 * A lease this node holds, and the local monotonic instant its safe window closes.
	 */
	private record Holding(long term, long safeUntil) {
	}

	private final class Group {

		private final String name;

		/**
		 * Closes the safe window when it runs out; scheduled on the watchdog at every grant and renewal.
		 */
		private final Runnable windowCloser = () -> closeWindow(this);

		/**
		 * Attempts to acquire after a release was announced.
		 */
		private final Runnable acquireAfterRelease = () -> attemptAcquire(this);

		private final List<LeadershipListener> listeners = new CopyOnWriteArrayList<>();

		private volatile @Nullable Holding holding;

		private volatile @Nullable LeaseState view;

		private @Nullable ScheduledFuture<?> expiry;

		private @Nullable ScheduledFuture<?> wake;

		private boolean renewFailed;

		private long cooldownUntil = System.nanoTime();

		/**
		 * The local monotonic instant at which the lease last read ends, on which a new term's leaderless time is
		 * measured.
		 */
		private long previousLeaseEnd;

		Group(String name) {
			this.name = name;
		}

	}

}
