package dev.leader.daemon;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

import dev.leader.DaemonAgent;
import dev.leader.Leadership;
import dev.leader.LeadershipGrantedEvent;
import dev.leader.NodeJoinedEvent;
import dev.leader.NodeLeftEvent;
import dev.leader.lease.Enrolment;
import dev.leader.lease.LeaseStatus;
import dev.leader.node.Names;
import dev.leader.node.OrderedEvents;
import dev.leader.node.OwnThreads;
import io.micrometer.observation.ObservationRegistry;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.context.SmartLifecycle;
import org.springframework.context.event.EventListener;

/**
 * Runs daemon assignment on one node: the leader's side when this node leads the daemons
 * group, and the node's side always. Usable without a Spring context: construct it,
 * {@link #start()} it after the engine and {@link #stop()} it before the engine; both can
 * be started again after a stop.
 * <p>
 * <b>Cycles.</b> Every node runs a cycle with each of its heartbeats (the engine's renew
 * interval), and at once when a node joins or leaves, when this node is granted a lease
 * and when notified (below). Where the store reads the assignments in the heartbeat's own
 * statement ({@link DaemonStore#followHeartbeat}), the heartbeat's cycle uses that
 * snapshot if it agrees with the last one this node read, so that polling costs no
 * statement; a snapshot that differs, possibly because it is older than a read made
 * since, is read again. Every other cycle reads.
 * <p>
 * <b>Leader, each cycle:</b> reads the nodes and assignments, plans with
 * {@link AssignmentPlanner}, and applies the plan with writes guarded by its term, so a
 * deposed leader changes nothing.
 * <p>
 * <b>Node, each cycle:</b> an assignment ASSIGNING to this node is acknowledged (ACTIVE)
 * and its agent started once the acknowledgement succeeded; a failed acknowledgement is
 * sent again each cycle, while the assignment is still ASSIGNING to this node with that
 * generation, until one succeeds, so that a failed statement does not move a healthy
 * daemon at the ack timeout, and one that committed though its reply was lost is started
 * when a read shows it ACTIVE; a REVOKING one is cancelled and, once its agent returned
 * or the drain timeout passed, handed back (DELETED); a running daemon whose assignment
 * is gone, on another node or of another generation is stopped at once. An assignment of
 * this node that it does not run (after a restart with the same node id, or a daemon it
 * does not have) is handed back at once.
 * <p>
 * <b>Guarantees (G4).</b> A node runs a daemon only while its assignment names the node
 * and the generation, and only once it acknowledged it (so never while the leader may
 * reclaim it for the ack timeout, which changes nothing after an acknowledgement), stops
 * all its daemons once the node expiry minus the safety margin has passed since it sent
 * its last heartbeat that succeeded (counted from the send on {@link System#nanoTime()},
 * as the safe window is: the database wrote that heartbeat no earlier, so other nodes
 * cannot declare this one dead sooner, however late the reply came), and the writes its
 * agents guard with {@link dev.leader.DaemonContext#guard()} commit only while that
 * assignment is current. A graceful {@link #stop()} drains the daemons (up to the drain
 * timeout) and hands them back, so the leader reassigns them without waiting for the node
 * expiry.
 * <p>
 * <b>Operations.</b> {@link #requestRebalance()}, {@link #requestMove(String, String)}
 * and {@link #drain(String, boolean)} may be called on any node: they check their input
 * against a fresh read, record the request in the store and return; the leader carries it
 * out in its next cycle, under its term. The store notifies the leader, so that cycle
 * starts at once where the store supports notifications.
 * <p>
 * <b>Notifications.</b> Where the store supports them ({@link DaemonStore#listen}), a
 * node runs a cycle as soon as the leader changed one of its assignments, and the leader
 * as soon as a node acknowledged or handed back an assignment or an operator recorded a
 * request; the heartbeat's cycle is then only the fallback for lost notifications.
 * <p>
 * <b>Structure and threads.</b> This class owns the lifecycle and the wiring:
 * {@code DaemonCycles} runs the cycles, {@code LeaderCycle} is the leader's side of one,
 * {@code NodeReconciler} the node's, each agent runs in an {@code AgentRun},
 * {@code DaemonOperations} serves the operators, and this class is the
 * {@link DaemonStatus} view. Which thread runs what, and which lock guards which field,
 * is stated in the {@linkplain dev.leader.daemon package documentation}. A failing
 * listener is logged and the loops go on.
 */
public final class DaemonCoordinator implements SmartLifecycle, DaemonStatus, DaemonCommands {

	private static final Log logger = LogFactory.getLog(DaemonCoordinator.class);

	private static final long WATCHDOG_PERIOD_MILLIS = 100;

	private final DaemonSettings settings;

	private final Map<String, DaemonAgent> agents;

	private final String nodeId;

	private final Object lifecycleLock = new Object();

	/**
	 * Held while the threads are created or torn down, so that a start waits until those
	 * of the previous run are gone.
	 */
	private final ReentrantLock threadsLock = new ReentrantLock();

	private final OwnThreads threads = new OwnThreads();

	private final OrderedEvents events;

	private final LeaderCycle leader;

	private final NodeReconciler reconciler;

	private final DaemonCycles cycles;

	private final DaemonOperations operations;

	// Replaced when the coordinator starts again: a stop shuts it down, so that it leaves
	// no thread behind.
	private volatile ScheduledExecutorService watchdog;

	private volatile boolean running;

	/**
	 * Creates a coordinator. Makes the node advertise the agents' names and, if there are
	 * any, take part in the daemons group, so create it before the node's leadership
	 * starts.
	 * @param leadership this node's leadership
	 * @param status its status
	 * @param enrolment where the daemons enrol with it
	 * @param store the store
	 * @param settings the settings
	 * @param agents the agents this node can run, by daemon name, see
	 * {@link #agentsByName(Map)}
	 * @param publisher receives every daemon event, on the {@code leader-daemon-events}
	 * thread
	 * @throws IllegalArgumentException if there are agents and the acknowledge timeout is
	 * not more than twice the engine's renew interval, or if an agent's name is invalid
	 */
	public DaemonCoordinator(Leadership leadership, LeaseStatus status, Enrolment enrolment, DaemonStore store,
			DaemonSettings settings, Map<String, DaemonAgent> agents, Consumer<Object> publisher) {
		// Only a node that runs daemons acknowledges them, at the latest on its next
		// poll.
		if (!agents.isEmpty()) {
			settings.requireAckTimeoutAllowsAPoll(status.settings());
		}
		agents.keySet().forEach((name) -> Names.requireValid("daemon name", name));
		this.settings = settings;
		this.agents = Collections.unmodifiableMap(new TreeMap<>(agents));
		this.nodeId = status.nodeId();
		if (!this.agents.isEmpty()) {
			// Someone must lead the daemons group for this node's daemons to be assigned.
			// A node without agents takes part only if its groups name it; it then plans
			// like any other leader.
			enrolment.addGroup(settings.group());
		}
		enrolment.advertiseDaemons(this.agents.keySet());
		LocalNode node = LocalNode.of(leadership, status, enrolment, settings.group());
		this.events = new OrderedEvents(this.threads, "leader-daemon-events", "Daemon node " + this.nodeId, publisher);
		this.leader = new LeaderCycle(node, store, settings);
		this.reconciler = new NodeReconciler(node, store, settings, this.agents, this.events::publish, this::wake,
				AgentRun.Backoff.DEFAULT);
		this.cycles = new DaemonCycles(node, store, this.leader, this.reconciler, this.threads, this::isRunning);
		this.operations = new DaemonOperations(node, store, settings);
		this.watchdog = newWatchdog();
		// The watchdog checks at once rather than within its period, so that the node
		// stops its daemons before the leader, woken by the same loss, gives them to
		// others.
		node.onSessionLost(this::checkContactNow);
	}

	/**
	 * Names agents by {@link DaemonAgent#daemonName()}, or by their bean name when it is
	 * empty.
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
	 * Starts the cycles; returns at once. A coordinator that was stopped starts again
	 * with new threads, and first undoes the drain of its stop, so that the leader gives
	 * this node daemons again.
	 */
	@Override
	public void start() {
		this.threadsLock.lock();
		try {
			if (this.running) {
				return;
			}
			if (this.watchdog.isShutdown()) {
				this.watchdog = newWatchdog();
			}
			this.events.start();
			this.cycles.prepare();
			synchronized (this.lifecycleLock) {
				this.running = true;
			}
			this.cycles.start();
			this.watchdog.scheduleWithFixedDelay(this.reconciler::checkContact, WATCHDOG_PERIOD_MILLIS,
					WATCHDOG_PERIOD_MILLIS, TimeUnit.MILLISECONDS);
			logger.info(String.format("Daemon node %s started with daemons %s, leader group %s", this.nodeId,
					this.agents.keySet(), this.settings.group()));
		}
		finally {
			this.threadsLock.unlock();
		}
	}

	/**
	 * Stops: cancels every daemon of this node, waits up to the drain timeout for the
	 * agents to return, and hands the daemons back so that the leader reassigns them at
	 * once. Blocks until then, and until the coordinator's threads have ended. The
	 * coordinator can be {@linkplain #start() started} again.
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
			this.cycles.stopFollowing();
			this.cycles.handOverAndShutdown(this.settings.drainTimeout().plusMillis(5000));
			this.events.stop();
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
	 * Sets the registry on which each cycle is observed as
	 * {@link DaemonObservations#CYCLE}.
	 * @param observationRegistry the registry
	 */
	public void setObservationRegistry(ObservationRegistry observationRegistry) {
		this.cycles.setObservationRegistry(observationRegistry);
	}

	@Override
	public DaemonRequest requestRebalance() {
		return this.operations.requestRebalance();
	}

	@Override
	public DaemonRequest requestMove(String daemon, @Nullable String node) {
		return this.operations.requestMove(daemon, node);
	}

	@Override
	public List<String> drain(String node, boolean drained) {
		return this.operations.drain(node, drained);
	}

	@Override
	public Map<String, String> stuck() {
		return this.operations.stuck(this.cycles.lastRead());
	}

	@Override
	public Map<String, Long> moves() {
		return this.leader.moves();
	}

	/**
	 * Returns the causes that {@link #moves()} counts.
	 * @return the causes, in lower case
	 * @see DaemonStatus#moveCauses()
	 */
	public static List<String> moveCauses() {
		return DaemonStatus.moveCauses();
	}

	/**
	 * Runs a cycle soon, on the {@code leader-daemons} thread; called when a node joins
	 * or leaves. Wake-ups that arrive while one is pending are merged.
	 */
	@EventListener({ NodeJoinedEvent.class, NodeLeftEvent.class })
	public void wake() {
		this.cycles.wake();
	}

	/**
	 * Runs a cycle soon when this node is granted the daemons group, whose leader plans
	 * the assignments; a grant of another group changes nothing here, and its cycle would
	 * be a read of the assignments, on a hand-over's path, for nothing.
	 * @param event the grant
	 */
	@EventListener
	public void granted(LeadershipGrantedEvent event) {
		if (event.group().equals(this.settings.group())) {
			wake();
		}
	}

	@Override
	public List<Assignment> assignments() {
		DaemonSnapshot read = this.cycles.lastRead();
		if (read == null) {
			return List.of();
		}
		List<Assignment> assignments = new ArrayList<>(read.assignments());
		assignments.sort(Comparator.comparing(Assignment::daemon));
		return assignments;
	}

	@Override
	public Set<String> daemons() {
		return this.agents.keySet();
	}

	@Override
	public Map<String, Long> running() {
		return this.reconciler.running();
	}

	@Override
	public DaemonSettings settings() {
		return this.settings;
	}

	private void checkContactNow() {
		try {
			this.watchdog.execute(this.reconciler::checkContact);
		}
		catch (RejectedExecutionException ex) {
			// Stopped: no daemon runs.
		}
	}

	private ScheduledExecutorService newWatchdog() {
		return Executors.newSingleThreadScheduledExecutor(this.threads.named("leader-daemons-watchdog"));
	}

}
