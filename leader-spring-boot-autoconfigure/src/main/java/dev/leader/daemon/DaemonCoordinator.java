package dev.leader.daemon;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.stream.Collectors;

import dev.leader.DaemonAgent;
import dev.leader.DaemonAssignedEvent;
import dev.leader.DaemonContext;
import dev.leader.DaemonRevokedEvent;
import dev.leader.DaemonStartedEvent;
import dev.leader.DaemonStoppedEvent;
import dev.leader.DaemonStoppedEvent.Reason;
import dev.leader.FencingToken;
import dev.leader.LeadershipGrantedEvent;
import dev.leader.NodeJoinedEvent;
import dev.leader.NodeLeftEvent;
import dev.leader.StaleLeadershipException;
import dev.leader.daemon.AssignmentPlanner.Action;
import dev.leader.daemon.AssignmentPlanner.Assign;
import dev.leader.daemon.AssignmentPlanner.Forget;
import dev.leader.daemon.AssignmentPlanner.MoveCause;
import dev.leader.daemon.AssignmentPlanner.Reclaim;
import dev.leader.daemon.AssignmentPlanner.ReclaimCause;
import dev.leader.daemon.AssignmentPlanner.Revoke;
import dev.leader.lease.LeaderEngine;
import dev.leader.node.Names;
import dev.leader.node.OwnThreads;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.context.SmartLifecycle;
import org.springframework.context.event.EventListener;

/**
 * Runs daemon assignment on one node: the leader's side when this node leads the daemons group, and the node's side
 * always. Usable without a Spring context: construct it, {@link #start()} it after the engine and {@link #stop()} it
 * before the engine; both can be started again after a stop.
 * <p>
 * <b>Cycles.</b> Every node runs a cycle with each of its heartbeats (the engine's renew interval), and at once when
 * a node joins or leaves, when this node is granted a lease and when notified (below). Where the store reads the
 * assignments in the heartbeat's own statement ({@link DaemonStore#followHeartbeat}), the heartbeat's cycle uses that
 * snapshot if it agrees with the last one this node read, so that polling costs no statement; a snapshot that
 * differs, possibly because it is older than a read made since, is read again. Every other cycle reads.
 * <p>
 * <b>Leader, each cycle:</b> reads the nodes and assignments, plans with {@link AssignmentPlanner}, and applies the
 * plan with writes guarded by its term, so a deposed leader changes nothing.
 * <p>
 * <b>Node, each cycle:</b> an assignment ASSIGNING to this node is started, then acknowledged (ACTIVE), and the
 * acknowledgement is sent again each cycle, while the assignment is still ASSIGNING to this node with that generation,
 * until one succeeds, so that a failed statement does not move a healthy daemon at the ack timeout; a REVOKING one
 * is cancelled and, once its agent returned or the drain timeout passed, handed back (DELETED); a running daemon whose
 * assignment is gone, on another node or of another generation is stopped at once. An assignment of this node that
 * it does not run (after a restart with the same node id, or a daemon it does not have) is handed back at once.
 * <p>
 * <b>Guarantees (G4).</b> A node runs a daemon only while its assignment names the node and the generation, stops all
 * its daemons once the node expiry minus the safety margin has passed since it sent its last heartbeat that succeeded
 * (counted from the send on {@link System#nanoTime()}, as the safe window is: the database wrote that heartbeat no
 * earlier, so other nodes cannot declare this one dead sooner, however late the reply came), and the writes its agents
 * guard with {@link DaemonContext#guard()} commit only while that assignment is current. A graceful {@link #stop()}
 * drains the daemons (up to the drain timeout) and hands them back, so the leader reassigns them without waiting for
 * the node expiry.
 * <p>
 * <b>Operations.</b> {@link #requestRebalance()}, {@link #requestMove(String, String)} and
 * {@link #drain(String, boolean)} may be called on any node: they check their input against a fresh read, record
 * the request in the store and return; the leader carries it out in its next cycle, under its term. The store
 * notifies the leader, so that cycle starts at once where the store supports notifications.
 * <p>
 * <b>Notifications.</b> Where the store supports them ({@link DaemonStore#listen}), a node runs a cycle as soon as
 * the leader changed one of its assignments, and the leader as soon as a node acknowledged or handed back an
 * assignment or an operator recorded a request; the heartbeat's cycle is then only the fallback for lost
 * notifications.
 * <p>
 * <b>Threads.</b> {@code leader-daemons} runs the cycles, {@code leader-daemons-watchdog} watches the heartbeat,
 * {@code leader-daemon-events} publishes the events in order, and each agent runs on a {@code leader-daemon-<name>}
 * thread of its own. A failing listener is logged and the loops go on.
 */
public final class DaemonCoordinator implements SmartLifecycle {

	private static final Log logger = LogFactory.getLog(DaemonCoordinator.class);

	private static final Duration INITIAL_BACKOFF = Duration.ofSeconds(1);

	private static final Duration MAX_BACKOFF = Duration.ofSeconds(30);

	private static final Duration WATCHDOG_PERIOD = Duration.ofMillis(100);

	private final LeaderEngine engine;

	private final DaemonStore store;

	private final DaemonSettings settings;

	private final Map<String, DaemonAgent> agents;

	private final Consumer<Object> publisher;

	private final String nodeId;

	private final Map<String, Run> runs = new ConcurrentHashMap<>();

	private final Object lifecycleLock = new Object();

	private final AtomicBoolean wakePending = new AtomicBoolean();

	/**
	 * Held while the threads are created or torn down, so that a start waits until those of the previous run are
	 * gone.
	 */
	private final ReentrantLock threadsLock = new ReentrantLock();

	// Replaced when the coordinator starts again: a stop shuts them down, so that it leaves no thread behind.

	private volatile ScheduledExecutorService cycles;

	private volatile ScheduledExecutorService watchdog;

	private volatile ExecutorService events;

	private final OwnThreads threads = new OwnThreads();

	private volatile boolean running;

	// Set when the last stop marked this node drained, which the next start undoes.
	private volatile boolean drainedByStop;

	private volatile @Nullable DaemonSnapshot lastRead;

	private volatile ObservationRegistry observationRegistry = ObservationRegistry.NOOP;

	private final Map<String, AtomicLong> moves = new ConcurrentHashMap<>();

	private @Nullable AutoCloseable notifications;

	// Null when the store cannot read the assignments with the heartbeat: the cycles then schedule their own reads.
	private volatile @Nullable AutoCloseable heartbeats;

	private final AtomicReference<@Nullable DaemonSnapshot> polled = new AtomicReference<>();

	// Leader state, on the leader-daemons thread only.

	private long ledTerm;

	private @Nullable Set<Member> liveMembers;

	private @Nullable Instant membershipChangedAt;

	private @Nullable ScheduledFuture<?> nextCycle;

	/**
	 * Creates a coordinator. Makes the engine advertise the agents' names and, if there are any, take part in the
	 * daemons group, so create it before the engine starts.
	 * @param engine the engine of this node
	 * @param store the store
	 * @param settings the settings
	 * @param agents the agents this node can run, by daemon name, see {@link #agentsByName(Map)}
	 * @param publisher receives every daemon event, on the {@code leader-daemon-events} thread
	 * @throws IllegalArgumentException if there are agents and the acknowledge timeout is not more than twice the
	 * engine's renew interval, or if an agent's name is invalid
	 */
	public DaemonCoordinator(LeaderEngine engine, DaemonStore store, DaemonSettings settings,
			Map<String, DaemonAgent> agents, Consumer<Object> publisher) {
		// Only a node that runs daemons acknowledges them, at the latest on its next poll.
		if (!agents.isEmpty()) {
			settings.requireAckTimeoutAllowsAPoll(engine.settings());
		}
		agents.keySet().forEach((name) -> Names.requireValid("daemon name", name));
		this.engine = engine;
		this.store = store;
		this.settings = settings;
		this.agents = Collections.unmodifiableMap(new TreeMap<>(agents));
		this.publisher = publisher;
		this.nodeId = engine.nodeId();
		if (!this.agents.isEmpty()) {
			// Someone must lead the daemons group for this node's daemons to be assigned. A node without agents
			// takes part only if its groups name it; it then plans like any other leader.
			engine.addGroup(settings.group());
		}
		engine.advertiseDaemons(this.agents.keySet());
		createThreads();
	}

	/**
	 * Names agents by {@link DaemonAgent#daemonName()}, or by their bean name when it is empty.
	 * @param beans the agents, by bean name
	 * @return the agents, by daemon name
	 * @throws IllegalArgumentException if a name is invalid or two agents share one
	 */
	public static Map<String, DaemonAgent> agentsByName(Map<String, DaemonAgent> beans) {
		Map<String, DaemonAgent> byName = new LinkedHashMap<>();
		Map<String, String> beanOf = new LinkedHashMap<>();
		beans.forEach((bean, agent) -> {
			String name = agent.daemonName().orElse(bean);
			try {
				Names.requireValid("daemon name", name);
			}
			catch (IllegalArgumentException ex) {
				throw new IllegalArgumentException("DaemonAgent bean '" + bean + "': " + ex.getMessage()
						+ ". Rename the bean or override DaemonAgent.daemonName()");
			}
			String other = beanOf.putIfAbsent(name, bean);
			if (other != null) {
				throw new IllegalArgumentException("DaemonAgent beans '" + other + "' and '" + bean
						+ "' are both named '" + name + "'; give one of them another daemonName()");
			}
			byName.put(name, agent);
		});
		return byName;
	}

	/**
	 * Starts the cycles; returns at once. A coordinator that was stopped starts again with new threads, and first
	 * undoes the drain of its stop, so that the leader gives this node daemons again.
	 */
	@Override
	public void start() {
		this.threadsLock.lock();
		try {
			if (this.running) {
				return;
			}
			if (this.cycles.isShutdown()) {
				createThreads();
			}
			// A wake-up or snapshot pending when the last run stopped was dropped with its thread: without this, the
			// flags would keep every later one from being scheduled.
			this.wakePending.set(false);
			this.polled.set(null);
			synchronized (this.lifecycleLock) {
				this.running = true;
			}
			this.notifications = this.store.listen(this::notified);
			this.heartbeats = this.store.followHeartbeat(this::polled);
			this.cycles.execute(() -> {
				undrainAfterStop();
				cycle(null);
			});
			this.watchdog.scheduleWithFixedDelay(this::checkHeartbeat, WATCHDOG_PERIOD.toMillis(),
					WATCHDOG_PERIOD.toMillis(), TimeUnit.MILLISECONDS);
			logger.info(String.format("Daemon node %s started with daemons %s, leader group %s", this.nodeId,
					this.agents.keySet(), this.settings.group()));
		}
		finally {
			this.threadsLock.unlock();
		}
	}

	/**
	 * Stops: cancels every daemon of this node, waits up to the drain timeout for the agents to return, and hands the
	 * daemons back so that the leader reassigns them at once. Blocks until then, and until the coordinator's threads
	 * have ended. The coordinator can be {@linkplain #start() started} again.
	 */
	@Override
	public void stop() {
		synchronized (this.lifecycleLock) {
			if (!this.running) {
				return;
			}
			this.running = false;
		}
		this.threadsLock.lock();
		try {
			this.watchdog.shutdownNow();
			closeNotifications();
			Future<?> handOver = this.cycles.submit(this::handOver);
			try {
				handOver.get(this.settings.drainTimeout().toMillis() + 5000, TimeUnit.MILLISECONDS);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
			catch (Exception ex) {
				logger.warn("Daemon node " + this.nodeId + " could not hand its daemons over cleanly: " + ex);
			}
			this.cycles.shutdownNow();
			this.events.shutdown();
			this.threads.awaitEnd();
		}
		finally {
			this.threadsLock.unlock();
		}
	}

	@Override
	public boolean isRunning() {
		return this.running;
	}

	/**
	 * Sets the registry on which each cycle is observed as {@code leader.daemon.cycle}.
	 * @param observationRegistry the registry
	 */
	public void setObservationRegistry(ObservationRegistry observationRegistry) {
		this.observationRegistry = observationRegistry;
	}

	/**
	 * Asks the leader to rebalance at its next cycle with nothing in flight, without waiting for the settle window.
	 * May be called on any node.
	 * @return the request as recorded
	 */
	public DaemonRequest requestRebalance() {
		DaemonRequest request = this.store.request(DaemonRequest.Kind.REBALANCE, "", null);
		logger.info(String.format("Daemon node=%s action=rebalance-requested", this.nodeId));
		return request;
	}

	/**
	 * Asks the leader to move a daemon: it revokes the daemon and, once drained, assigns it to the given node, or to
	 * the least-loaded other node that can run it. May be called on any node. A daemon that runs nowhere now is
	 * assigned accordingly when it is next assigned.
	 * @param daemon the daemon
	 * @param node the node to move it to, or {@code null} for the least-loaded other node
	 * @return the request as recorded
	 * @throws NoSuchElementException if no node advertises the daemon and it was never assigned
	 * @throws IllegalArgumentException if the node is unknown, dead, drained or lacks the daemon, or if no other node
	 * can run the daemon; nothing is recorded then
	 */
	public DaemonRequest requestMove(String daemon, @Nullable String node) {
		DaemonSnapshot snapshot = this.store.read(this.engine.settings().nodeExpiry());
		boolean known = snapshot.assignment(daemon).isPresent()
				|| snapshot.members().stream().anyMatch((member) -> member.daemons().contains(daemon));
		if (!known) {
			throw new NoSuchElementException(
					"Unknown daemon '" + daemon + "': no node advertises it and it was never assigned");
		}
		if (node != null) {
			Member target = snapshot.member(node)
				.orElseThrow(() -> new IllegalArgumentException("Unknown node '" + node + "'"));
			String problem = !target.alive() ? "is dead" : target.drained() ? "is drained"
					: !target.daemons().contains(daemon) ? "does not have daemon '" + daemon + "'" : null;
			if (problem != null) {
				throw new IllegalArgumentException("Cannot move '" + daemon + "' to node '" + node + "': it " + problem);
			}
		}
		else {
			String current = snapshot.assignment(daemon).filter(Assignment::isLive).map(Assignment::node).orElse(null);
			boolean elsewhere = snapshot.members()
				.stream()
				.anyMatch((member) -> member.takesDaemons() && member.daemons().contains(daemon)
						&& !member.id().equals(current));
			if (!elsewhere) {
				throw new IllegalArgumentException("Cannot move '" + daemon + "': no other live, undrained node has it");
			}
		}
		DaemonRequest request = this.store.request(DaemonRequest.Kind.MOVE, daemon, node);
		logger.info(String.format("Daemon daemon=%s node=%s action=move-requested to=%s", daemon, this.nodeId,
				(node != null) ? node : "any"));
		return request;
	}

	/**
	 * Drains a node, or undrains it. The leader gives a drained node no daemons and moves each of its daemons that
	 * another node can run away from it, without waiting for the settle window and regardless of the move cap. The
	 * node stays drained until it is undrained or its node id starts again: in another process, or in this one once
	 * its engine was stopped and started. May be called on any node.
	 * @param node the node
	 * @param drained whether to drain it
	 * @return the daemons assigned to the node as last read
	 * @throws NoSuchElementException if the coordinator does not know the node
	 */
	public List<String> drain(String node, boolean drained) {
		if (!this.store.drain(node, drained)) {
			throw new NoSuchElementException("Unknown node '" + node + "'");
		}
		logger.info(String.format("Daemon node=%s action=%s by=%s", node, drained ? "drained" : "undrained",
				this.nodeId));
		return this.store.read(this.engine.settings().nodeExpiry())
			.assignments()
			.stream()
			.filter((assignment) -> assignment.isLive() && assignment.node().equals(node))
			.map(Assignment::daemon)
			.sorted()
			.toList();
	}

	/**
	 * Returns the daemons that, as this node last read them, have stayed unassigned or stuck past their timeouts,
	 * while this node leads the daemons group: with no live assignment although some node (alive, or dead and not yet
	 * forgotten) advertises them, ASSIGNING past the acknowledge timeout, or REVOKING past the drain timeout. Empty
	 * on the other nodes. A daemon handed back counts as unassigned only once it has been so for a renew interval,
	 * the time the leader takes to reassign it.
	 * @return why each daemon is stuck, by daemon name
	 */
	public Map<String, String> stuck() {
		DaemonSnapshot read = this.lastRead;
		Map<String, String> stuck = new TreeMap<>();
		if (read == null || !leads()) {
			return stuck;
		}
		Set<String> advertised = new java.util.TreeSet<>();
		read.members().forEach((member) -> advertised.addAll(member.daemons()));
		for (Assignment assignment : read.assignments()) {
			long age = Duration.between(assignment.since(), read.now()).toMillis();
			if (assignment.state() == AssignmentState.ASSIGNING && age >= this.settings.ackTimeout().toMillis()) {
				stuck.put(assignment.daemon(), String.format("ASSIGNING on %s for %d ms, past the ack timeout of %d ms",
						assignment.node(), age, this.settings.ackTimeout().toMillis()));
			}
			else if (assignment.state() == AssignmentState.REVOKING
					&& age >= this.settings.drainTimeout().toMillis()) {
				stuck.put(assignment.daemon(), String.format("REVOKING on %s for %d ms, past the drain timeout of %d "
						+ "ms", assignment.node(), age, this.settings.drainTimeout().toMillis()));
			}
			else if (!assignment.isLive() && advertised.contains(assignment.daemon())
					&& age >= pollInterval().toMillis()) {
				stuck.put(assignment.daemon(), String.format("unassigned for %d ms: no live, undrained node that "
						+ "has it", age));
			}
		}
		for (String daemon : advertised) {
			if (read.assignment(daemon).isEmpty()) {
				stuck.put(daemon, "unassigned: no live, undrained node that has it");
			}
		}
		return stuck;
	}

	/**
	 * Returns how many daemons the leader took away from a node while this node led, by cause in lower case:
	 * {@code rebalance}, {@code requested}, {@code drained} (revoked from a running node), {@code node_dead},
	 * {@code ack_timeout}, {@code drain_timeout} (reclaimed without waiting for the node).
	 * @return the counts, by cause
	 */
	public Map<String, Long> moves() {
		Map<String, Long> counts = new TreeMap<>();
		this.moves.forEach((cause, count) -> counts.put(cause, count.get()));
		return counts;
	}

	/**
	 * Returns the causes that {@link #moves()} counts.
	 * @return the causes, in lower case
	 */
	public static List<String> moveCauses() {
		List<String> causes = new ArrayList<>();
		for (MoveCause cause : MoveCause.values()) {
			causes.add(cause.name().toLowerCase(java.util.Locale.ROOT));
		}
		for (ReclaimCause cause : ReclaimCause.values()) {
			causes.add(cause.name().toLowerCase(java.util.Locale.ROOT));
		}
		return causes;
	}

	/**
	 * Runs a cycle soon, on the {@code leader-daemons} thread; called when a node joins or leaves and when this node is
	 * granted a lease. Wake-ups that arrive while one is pending are merged.
	 */
	@EventListener({ NodeJoinedEvent.class, NodeLeftEvent.class, LeadershipGrantedEvent.class })
	public void wake() {
		if (!this.running || !this.wakePending.compareAndSet(false, true)) {
			return;
		}
		try {
			this.cycles.execute(() -> {
				this.wakePending.set(false);
				cycle(null);
			});
		}
		catch (RejectedExecutionException ex) {
			// stopping
		}
	}

	/**
	 * Returns the assignments as this node last read them.
	 * @return the assignments, deleted ones included, by daemon name
	 */
	public List<Assignment> assignments() {
		DaemonSnapshot read = this.lastRead;
		if (read == null) {
			return List.of();
		}
		List<Assignment> assignments = new ArrayList<>(read.assignments());
		assignments.sort(Comparator.comparing(Assignment::daemon));
		return assignments;
	}

	/**
	 * Returns the daemons this node can run.
	 * @return the daemon names
	 */
	public Set<String> daemons() {
		return this.agents.keySet();
	}

	/**
	 * Returns the daemons running on this node, with their generations.
	 * @return the generations, by daemon name
	 */
	public Map<String, Long> running() {
		Map<String, Long> running = new TreeMap<>();
		this.runs.values().forEach((run) -> running.put(run.daemon, run.generation));
		return running;
	}

	/**
	 * Returns the settings.
	 * @return the settings
	 */
	public DaemonSettings settings() {
		return this.settings;
	}

	// Runs on the thread that sent the heartbeat. Only the newest snapshot waits for the cycles thread.

	private void polled(DaemonSnapshot snapshot) {
		if (!this.running || this.polled.getAndSet(snapshot) != null) {
			return;
		}
		try {
			this.cycles.execute(() -> cycle(this.polled.getAndSet(null)));
		}
		catch (RejectedExecutionException ex) {
			// stopping
		}
	}

	/**
	 * Returns whether this node leads the daemons group. A node without agents whose groups do not name it takes no
	 * part in its election, and never leads it.
	 */
	private boolean leads() {
		String group = this.settings.group();
		return this.engine.groups().contains(group) && this.engine.isLeader(group);
	}

	// Runs on the store's notification thread.

	private void notified(String node) {
		if (node.isEmpty() ? leads() : node.equals(this.nodeId)) {
			wake();
		}
	}

	private void closeNotifications() {
		for (AutoCloseable handle : new AutoCloseable[] { this.notifications, this.heartbeats }) {
			if (handle != null) {
				try {
					handle.close();
				}
				catch (Exception ex) {
					logger.debug("Could not stop following assignment changes: " + ex);
				}
			}
		}
		this.notifications = null;
		this.heartbeats = null;
	}

	// Everything below runs on the leader-daemons thread unless stated otherwise.

	/**
	 * Runs a cycle on the snapshot read with a heartbeat, or on a fresh read.
	 * @param polled the heartbeat's snapshot, or {@code null} to read
	 */
	private void cycle(@Nullable DaemonSnapshot polled) {
		if (!this.running) {
			return;
		}
		cancel(this.nextCycle);
		Optional<FencingToken> token = leads() ? this.engine.token(this.settings.group()) : Optional.empty();
		Observation observation = Observation
			.createNotStarted(dev.leader.actuate.LeaderMeters.DAEMON_CYCLE.getName(), this.observationRegistry)
			.lowCardinalityKeyValue("role", token.isPresent() ? "leader" : "node");
		try (Observation.Scope scope = observation.start().openScope()) {
			Duration nodeExpiry = this.engine.settings().nodeExpiry();
			DaemonSnapshot snapshot = (polled != null && polled.sameStateAs(this.lastRead)) ? polled
					: this.store.read(nodeExpiry);
			if (token.isPresent()) {
				if (lead(snapshot, token.get())) {
					snapshot = this.store.read(nodeExpiry);
				}
			}
			else {
				this.ledTerm = 0;
			}
			this.lastRead = snapshot;
			reconcile(snapshot);
		}
		catch (RuntimeException ex) {
			observation.error(ex);
			logger.warn("Daemon node " + this.nodeId + " cycle failed; retrying next cycle: " + ex);
		}
		finally {
			observation.stop();
		}
		if (this.running && this.heartbeats == null) {
			try {
				this.nextCycle = this.cycles.schedule(() -> cycle(null), pollInterval().toNanos(),
						TimeUnit.NANOSECONDS);
			}
			catch (RejectedExecutionException ex) {
				// stopping
			}
		}
	}

	private boolean lead(DaemonSnapshot snapshot, FencingToken token) {
		Set<Member> live = snapshot.members().stream().filter(Member::alive).collect(Collectors.toSet());
		if (token.term() != this.ledTerm || !live.equals(this.liveMembers) || this.membershipChangedAt == null) {
			this.ledTerm = token.term();
			this.liveMembers = live;
			this.membershipChangedAt = snapshot.now();
		}
		List<Action> plan = AssignmentPlanner.plan(snapshot, this.membershipChangedAt, this.settings, pollInterval());
		boolean changed = false;
		for (Action action : plan) {
			if (!leads()) {
				return changed;
			}
			changed |= apply(action, token);
		}
		return changed;
	}

	private boolean apply(Action action, FencingToken token) {
		long started = System.nanoTime();
		boolean applied;
		String detail;
		String moved = null;
		if (action instanceof Reclaim reclaim) {
			applied = this.store.reclaim(token, this.nodeId, reclaim.daemon(), reclaim.generation());
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
			this.moves.computeIfAbsent(moved.toLowerCase(java.util.Locale.ROOT), (cause) -> new AtomicLong())
				.incrementAndGet();
		}
		long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
		if (applied) {
			logger.info(String.format("Daemon daemon=%s leader=%s term=%d %s latency=%dms", action.daemon(),
					this.nodeId, token.term(), detail, millis));
		}
		else {
			logger.debug(String.format("Daemon daemon=%s leader=%s term=%d not applied (outdated read or lease "
					+ "lost): %s", action.daemon(), this.nodeId, token.term(), detail));
		}
		return applied;
	}

	private void reconcile(DaemonSnapshot snapshot) {
		for (Run run : List.copyOf(this.runs.values())) {
			Assignment assignment = snapshot.assignment(run.daemon).orElse(null);
			if (assignment == null || !assignment.isLive() || !this.nodeId.equals(assignment.node())
					|| assignment.generation() != run.generation) {
				stopAtOnce(run, Reason.TAKEN_OVER);
			}
			else if (assignment.state() == AssignmentState.REVOKING) {
				drain(run, Reason.REVOKED);
			}
			else if (!run.acknowledged && assignment.state() == AssignmentState.ASSIGNING) {
				retryAcknowledge(run);
			}
			else if (!run.acknowledged) {
				// A failed acknowledgement that committed before its connection broke.
				run.acknowledged = true;
				logger.info(String.format("Daemon daemon=%s node=%s action=started generation=%d ack-failures=%d",
						run.daemon, this.nodeId, run.generation, run.acknowledgeFailures));
			}
		}
		for (Assignment assignment : snapshot.assignments()) {
			if (assignment.isLive() && this.nodeId.equals(assignment.node()) && !isRunning(assignment)) {
				take(assignment);
			}
		}
		for (Run run : List.copyOf(this.runs.values())) {
			if (run.draining) {
				finishDrain(run);
			}
		}
	}

	private boolean isRunning(Assignment assignment) {
		Run run = this.runs.get(assignment.daemon());
		return run != null && run.generation == assignment.generation();
	}

	private void take(Assignment assignment) {
		DaemonAgent agent = this.agents.get(assignment.daemon());
		if (assignment.state() != AssignmentState.ASSIGNING || agent == null) {
			// Not started by this process: it restarted with the same node id, or lacks the daemon. Handing it back
			// lets the leader reassign it now rather than after a timeout.
			if (this.store.release(this.nodeId, assignment.daemon(), assignment.generation())) {
				logger.info(String.format("Daemon daemon=%s node=%s action=handed-back generation=%d state=%s",
						assignment.daemon(), this.nodeId, assignment.generation(), assignment.state()));
			}
			return;
		}
		if (!heartbeatIsRecent() || this.runs.containsKey(assignment.daemon())) {
			return;
		}
		publish(new DaemonAssignedEvent(assignment.daemon(), assignment.generation(), this.nodeId));
		Run run = new Run(assignment.daemon(), assignment.generation(), agent);
		this.runs.put(run.daemon, run);
		run.thread.start();
		try {
			if (!acknowledge(run)) {
				// Changed since it was read: only this node's acknowledgement takes its assignment out of ASSIGNING.
				stopAtOnce(run, Reason.TAKEN_OVER);
			}
		}
		catch (RuntimeException ex) {
			acknowledgeFailed(run, ex);
		}
	}

	/**
	 * Sends again an acknowledgement that failed, for a run whose assignment was read ASSIGNING to this node with its
	 * generation. Nothing changing means the read is outdated: the failed acknowledgement may have committed before
	 * its connection broke, or the leader may have taken the daemon back. The next cycle's read tells, and stops the
	 * run in the second case.
	 */
	private void retryAcknowledge(Run run) {
		try {
			if (!acknowledge(run)) {
				logger.debug(String.format("Daemon daemon=%s node=%s generation=%d: the acknowledgement changed "
						+ "nothing, the assignment was read before it changed", run.daemon, this.nodeId,
						run.generation));
			}
		}
		catch (RuntimeException ex) {
			acknowledgeFailed(run, ex);
		}
	}

	/**
	 * Marks the run's assignment ACTIVE, if it is still ASSIGNING to this node with the run's generation.
	 * @return whether it changed
	 */
	private boolean acknowledge(Run run) {
		if (!this.store.acknowledge(this.nodeId, run.daemon, run.generation)) {
			return false;
		}
		run.acknowledged = true;
		logger.info(String.format("Daemon daemon=%s node=%s action=started generation=%d%s", run.daemon, this.nodeId,
				run.generation, (run.acknowledgeFailures > 0) ? " ack-failures=" + run.acknowledgeFailures : ""));
		return true;
	}

	private void acknowledgeFailed(Run run, RuntimeException ex) {
		run.acknowledgeFailures++;
		logger.warn(String.format("Daemon daemon=%s node=%s action=ack-failed generation=%d; retrying next cycle, "
				+ "the ack timeout is %s: %s", run.daemon, this.nodeId, run.generation, this.settings.ackTimeout(),
				ex));
	}

	private void drain(Run run, Reason reason) {
		if (run.draining) {
			return;
		}
		run.draining = true;
		run.drainDeadline = System.nanoTime() + this.settings.drainTimeout().toNanos();
		if (reason == Reason.REVOKED) {
			publish(new DaemonRevokedEvent(run.daemon, run.generation, this.nodeId));
		}
		run.cancel(reason);
		logger.info(String.format("Daemon daemon=%s node=%s action=draining generation=%d reason=%s", run.daemon,
				this.nodeId, run.generation, reason));
	}

	private void finishDrain(Run run) {
		boolean returned = !run.thread.isAlive();
		if (!returned && System.nanoTime() - run.drainDeadline < 0) {
			return;
		}
		if (!returned) {
			run.thread.interrupt();
			run.end(Reason.DRAIN_TIMEOUT);
			logger.warn(String.format("Daemon daemon=%s node=%s action=forced generation=%d: the agent did not "
					+ "return within leader.daemons.drain-timeout (%s); its thread was interrupted and its guarded "
					+ "writes are rejected from now on", run.daemon, this.nodeId, run.generation,
					this.settings.drainTimeout()));
		}
		this.runs.remove(run.daemon, run);
		if (this.store.release(this.nodeId, run.daemon, run.generation)) {
			logger.info(String.format("Daemon daemon=%s node=%s action=released generation=%d", run.daemon,
					this.nodeId, run.generation));
		}
	}

	private void undrainAfterStop() {
		if (!this.drainedByStop) {
			return;
		}
		this.drainedByStop = false;
		try {
			// False when the engine deregistered the node on its own stop: it registers again undrained.
			if (this.store.drain(this.nodeId, false)) {
				logger.info(String.format("Daemon node=%s action=undrained by=%s", this.nodeId, this.nodeId));
			}
		}
		catch (RuntimeException ex) {
			logger.warn("Daemon node " + this.nodeId + " could not undo the drain of its last stop; it gets no "
					+ "daemons until undrained: " + ex);
		}
	}

	private void handOver() {
		cancel(this.nextCycle);
		try {
			// Still alive and now the least loaded: without the flag the leader would give the daemons straight back.
			this.drainedByStop = this.store.drain(this.nodeId, true);
		}
		catch (RuntimeException ex) {
			logger.warn("Daemon node " + this.nodeId + " could not mark itself drained before handing over: " + ex);
		}
		List<Run> draining = List.copyOf(this.runs.values());
		draining.forEach((run) -> drain(run, Reason.SHUTDOWN));
		for (Run run : draining) {
			long left = run.drainDeadline - System.nanoTime();
			try {
				run.thread.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
			run.drainDeadline = System.nanoTime();
			try {
				finishDrain(run);
			}
			catch (RuntimeException ex) {
				logger.warn("Daemon node " + this.nodeId + " could not hand " + run.daemon + " back; the leader "
						+ "reclaims it once this node is gone: " + ex);
			}
		}
		logger.info(String.format("Daemon node %s stopped, handed back %s", this.nodeId,
				draining.stream().map((run) -> run.daemon).toList()));
	}

	// Called from the leader-daemons and leader-daemons-watchdog threads.

	private void stopAtOnce(Run run, Reason reason) {
		run.cancel(reason);
		run.thread.interrupt();
		run.end(reason);
		if (this.runs.remove(run.daemon, run)) {
			logger.warn(String.format("Daemon daemon=%s node=%s action=stopped generation=%d reason=%s", run.daemon,
					this.nodeId, run.generation, reason));
		}
	}

	private Duration pollInterval() {
		return this.engine.settings().renewInterval();
	}

	/**
	 * Returns whether this node sent its last heartbeat that succeeded less than the node expiry minus the safety
	 * margin ago. Counted from the send, since the database may have written the heartbeat long before the reply
	 * arrived, and counts the node dead the node expiry after that write.
	 */
	private boolean heartbeatIsRecent() {
		Optional<Duration> since = this.engine.sinceLastHeartbeat();
		return since.isPresent() && since.get().compareTo(heartbeatLimit()) < 0;
	}

	private Duration heartbeatLimit() {
		return this.engine.settings().nodeExpiry().minus(this.engine.settings().safetyMargin());
	}

	// Runs on the leader-daemons-watchdog thread.

	private void checkHeartbeat() {
		if (this.runs.isEmpty() || heartbeatIsRecent()) {
			return;
		}
		logger.warn("Daemon node " + this.nodeId + " sent its last heartbeat that succeeded more than "
				+ heartbeatLimit() + " ago (node expiry minus safety margin); stopping its daemons, other nodes may "
				+ "take them over");
		List.copyOf(this.runs.values()).forEach((run) -> stopAtOnce(run, Reason.CONTACT_LOST));
	}

	private void publish(Object event) {
		try {
			this.events.execute(() -> {
				try {
					this.publisher.accept(event);
				}
				catch (Throwable ex) {
					logger.error("Daemon event listener failed; the coordinator carries on", ex);
				}
			});
		}
		catch (RejectedExecutionException ex) {
			logger.warn("Daemon node " + this.nodeId + " stopped before it could publish " + event);
		}
	}

	private void createThreads() {
		this.cycles = Executors.newSingleThreadScheduledExecutor(this.threads.named("leader-daemons"));
		this.watchdog = Executors.newSingleThreadScheduledExecutor(this.threads.named("leader-daemons-watchdog"));
		this.events = Executors.newSingleThreadExecutor(this.threads.named("leader-daemon-events"));
	}

	private static void cancel(@Nullable Future<?> future) {
		if (future != null) {
			future.cancel(false);
		}
	}

	/**
	 * One assignment running on this node, and the context its agent sees.
	 */
	private final class Run implements DaemonContext {

		private final String daemon;

		private final long generation;

		private final DaemonAgent agent;

		private final Thread thread;

		private final CountDownLatch cancelled = new CountDownLatch(1);

		private final AtomicBoolean ended = new AtomicBoolean();

		private volatile Reason reason = Reason.SHUTDOWN;

		private volatile boolean started;

		private volatile boolean draining;

		private volatile long drainDeadline;

		// On the leader-daemons thread only.

		private boolean acknowledged;

		private int acknowledgeFailures;

		Run(String daemon, long generation, DaemonAgent agent) {
			this.daemon = daemon;
			this.generation = generation;
			this.agent = agent;
			this.thread = new Thread(this::runAgent, "leader-daemon-" + daemon);
			this.thread.setDaemon(true);
		}

		@Override
		public String name() {
			return this.daemon;
		}

		@Override
		public long generation() {
			return this.generation;
		}

		@Override
		public boolean isCancelled() {
			return this.cancelled.getCount() == 0;
		}

		@Override
		public boolean awaitCancellation(Duration timeout) throws InterruptedException {
			return this.cancelled.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
		}

		@Override
		public void guard() {
			Assignment assignment = DaemonCoordinator.this.store.lock(this.daemon);
			String problem;
			if (assignment == null) {
				problem = "the daemon has no assignment";
			}
			else if (assignment.generation() != this.generation) {
				problem = "the assignment is at generation " + assignment.generation() + " on node "
						+ assignment.node();
			}
			else if (!DaemonCoordinator.this.nodeId.equals(assignment.node())) {
				problem = "the assignment is on node " + assignment.node();
			}
			else if (!assignment.isLive()) {
				problem = "the assignment was deleted";
			}
			else {
				return;
			}
			throw new StaleLeadershipException("Stale daemon assignment of '" + this.daemon + "': this write was "
					+ "made under generation " + this.generation + " on node " + DaemonCoordinator.this.nodeId
					+ ", but " + problem, this.daemon, this.generation,
					(assignment != null) ? assignment.generation() : 0,
					(assignment != null && assignment.isLive()) ? assignment.node() : null);
		}

		void cancel(Reason reason) {
			if (!isCancelled()) {
				this.reason = reason;
				this.cancelled.countDown();
			}
		}

		/**
		 * Publishes the stop of the current start, once.
		 */
		void end(Reason reason) {
			if (this.started && this.ended.compareAndSet(false, true)) {
				publish(new DaemonStoppedEvent(this.daemon, this.generation, DaemonCoordinator.this.nodeId, reason,
						null));
			}
		}

		// Runs on the agent's own thread.

		private void runAgent() {
			Duration waited = Duration.ZERO;
			String node = DaemonCoordinator.this.nodeId;
			while (!isCancelled()) {
				this.started = true;
				publish(new DaemonStartedEvent(this.daemon, this.generation, node));
				long began = System.nanoTime();
				Throwable failure = null;
				try {
					this.agent.run(this);
				}
				catch (Throwable ex) {
					failure = ex;
				}
				if (isCancelled()) {
					break;
				}
				this.started = false;
				Reason outcome = (failure != null) ? Reason.FAILED : Reason.COMPLETED;
				// The back-off doubles only while the agent fails sooner than it waited: a run that outlasted its
				// back-off was healthy, and a failure long after the last one (a database blip) is retried soon.
				boolean outlasted = System.nanoTime() - began >= waited.toNanos();
				Duration wait = (failure == null || outlasted) ? INITIAL_BACKOFF
						: min(waited.multipliedBy(2), MAX_BACKOFF);
				waited = wait;
				if (failure != null) {
					logger.error(String.format("Daemon daemon=%s node=%s action=failed generation=%d; restarting in "
							+ "%d ms", this.daemon, node, this.generation, wait.toMillis()), failure);
				}
				else {
					logger.warn(String.format("Daemon daemon=%s node=%s action=returned generation=%d while not "
							+ "cancelled; restarting in %d ms", this.daemon, node, this.generation, wait.toMillis()));
				}
				publish(new DaemonStoppedEvent(this.daemon, this.generation, node, outcome, failure));
				try {
					if (awaitCancellation(wait)) {
						return;
					}
				}
				catch (InterruptedException ex) {
					return;
				}
			}
			end(this.reason);
			DaemonCoordinator.this.wake();
		}

		private static Duration min(Duration a, Duration b) {
			return (a.compareTo(b) <= 0) ? a : b;
		}

	}

}
