package dev.leader.daemon;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import dev.leader.DaemonAgent;
import dev.leader.DaemonAssignedEvent;
import dev.leader.DaemonRevokedEvent;
import dev.leader.DaemonStoppedEvent.Reason;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * The node's side of daemon assignment: makes the daemons running on this node follow its
 * assignments as read.
 * <ul>
 * <li>An assignment ASSIGNING to this node is acknowledged (ACTIVE), and its agent is
 * started only once the acknowledgement succeeded. A failed acknowledgement is sent again
 * each cycle while the assignment is still ASSIGNING to this node with that generation,
 * so that one failed statement does not move a healthy daemon at the ack timeout; one
 * whose reply was lost after it committed is found ACTIVE by a later read, and its agent
 * is started then.</li>
 * <li>A REVOKING one is cancelled and, once its agent returned or the drain timeout
 * passed, handed back (DELETED).</li>
 * <li>A running daemon whose assignment is gone, on another node or of another generation
 * is stopped at once.</li>
 * <li>An assignment of this node that it does not run (after a restart with the same node
 * id, or a daemon it does not have) is handed back at once.</li>
 * </ul>
 * A daemon is started only while {@link LocalNode#heartbeatIsRecent() the last heartbeat
 * is recent}, and the {@linkplain #checkContact() watchdog} stops them all once it is
 * not, or once the last read of the assignments that reached {@link #reconcile} was sent
 * longer ago than the drain timeout plus a poll interval, minus the safety margin (G4):
 * the leader takes a daemon from a live node only by revoking it, after that read, and
 * reclaiming it that long after the revoke, so a node whose heartbeats succeed while its
 * reads of the assignments fail stops before the daemon runs elsewhere. Where the node is
 * bound to its database session (the daemons group is a crash-takeover group), the
 * watchdog also stops them all as soon as that session ended
 * ({@link LocalNode#sessionsLost()}), since the leader counts the node dead from that
 * moment; the assignments, no longer run, are then handed back.
 * <p>
 * <b>Why acknowledge first (G4).</b> The leader reclaims an assignment that is still
 * ASSIGNING at the ack timeout, counted on the database's clock, and gives it to another
 * node in the same cycle; this node would learn of it only at its next read, which a
 * stalled connection delays up to the node expiry. An agent that starts only after its
 * acknowledgement succeeded never runs while its assignment is ASSIGNING, and a reclaim
 * for the ack timeout changes nothing once the assignment left ASSIGNING
 * ({@link DaemonStore#reclaim}): the acknowledgement and that reclaim are exclusive, so
 * the daemon is given to another node only by a revoke (which this node drains), by a
 * reclaim of this node as dead (after its watchdog stopped it), or by its hand-back. No
 * deadline on this node's clock is needed, so no margin for clock-rate drift either.
 * {@link #reconcile}, {@link #handOver()} and {@link #undrainAfterStop()} run on the
 * {@code leader-daemons} thread, {@link #checkContact()} on
 * {@code leader-daemons-watchdog}, and {@link #running()} on any thread; see the package
 * documentation.
 */
final class NodeReconciler {

	// The coordinator's category, which operators' logging configuration and alerts
	// already name.
	private static final Log logger = LogFactory.getLog(DaemonCoordinator.class);

	private final LocalNode node;

	private final String nodeId;

	private final DaemonStore store;

	private final DaemonSettings settings;

	private final Map<String, DaemonAgent> agents;

	private final Consumer<Object> events;

	private final Runnable runEnded;

	private final AgentRun.Backoff backoff;

	// Written by the leader-daemons thread and by the watchdog's stops; removals name the
	// run, so that a late stop of an old run never removes its successor.
	private final Map<String, AgentRun> runs = new ConcurrentHashMap<>();

	// The generation of each assignment this node sent an acknowledgement for and has not
	// started: a failed one may have committed before its connection broke. On the
	// leader-daemons thread only.
	private final Map<String, Long> acknowledgementsSent = new HashMap<>();

	// The failed acknowledgements of each such assignment. On the leader-daemons thread
	// only.
	private final Map<String, Integer> acknowledgeFailures = new HashMap<>();

	// Set when the last stop marked this node drained, which the next start undoes.
	private volatile boolean drainedByStop;

	// When the last read of the assignments given to reconcile was sent, on nanoTime.
	private volatile long lastReadSent;

	// The node's count of lost sessions at the last reconcile. On the leader-daemons
	// thread only.
	private long reconciledEpoch;

	/**
	 * Creates a reconciler.
	 * @param node this node
	 * @param store the store
	 * @param settings the settings
	 * @param agents the agents this node can run, by daemon name
	 * @param events receives the daemon events, to publish in order
	 * @param runEnded called on an agent's thread once it has returned after a
	 * cancellation
	 * @param backoff the back-off of agents that fail or return
	 */
	NodeReconciler(LocalNode node, DaemonStore store, DaemonSettings settings, Map<String, DaemonAgent> agents,
			Consumer<Object> events, Runnable runEnded, AgentRun.Backoff backoff) {
		this.node = node;
		this.nodeId = node.id();
		this.store = store;
		this.settings = settings;
		this.agents = agents;
		this.events = events;
		this.runEnded = runEnded;
		this.backoff = backoff;
		if (readLimit().compareTo(Duration.ofMillis(100)) < 0) {
			throw new IllegalArgumentException("leader.daemons.drain-timeout (" + settings.drainTimeout()
					+ ") plus leader.lease.renew-interval (" + node.pollInterval()
					+ ") must exceed leader.lease.safety-margin (" + node.lease().safetyMargin() + ") by at least "
					+ "100 ms: a node keeps its daemons only that long after its last read of the assignments");
		}
	}

	/**
	 * Returns the daemons running on this node, with their generations.
	 * @return the generations, by daemon name
	 */
	Map<String, Long> running() {
		Map<String, Long> running = new TreeMap<>();
		this.runs.values().forEach((run) -> running.put(run.name(), run.generation()));
		return running;
	}

	/**
	 * Makes the daemons of this node follow the assignments read.
	 * @param snapshot the assignments, as read in this cycle
	 * @param sentAt when the read was sent, on {@link System#nanoTime()}, or earlier
	 */
	void reconcile(DaemonSnapshot snapshot, long sentAt) {
		// First, so that a cycle that the leader's change starts before the watchdog's
		// next check stops them for the right reason.
		stopRunsOfEarlierSessions();
		this.lastReadSent = sentAt;
		long epoch = this.node.sessionsLost();
		if (epoch != this.reconciledEpoch) {
			// An acknowledgement sent before the node's session ended no longer lets its
			// agent start: the leader may have counted the node dead since.
			this.acknowledgementsSent.clear();
			this.acknowledgeFailures.clear();
			this.reconciledEpoch = epoch;
		}
		for (AgentRun run : List.copyOf(this.runs.values())) {
			Assignment assignment = snapshot.assignment(run.name()).orElse(null);
			if (assignment == null || !assignment.isLive() || !this.nodeId.equals(assignment.node())
					|| assignment.generation() != run.generation()) {
				stopAtOnce(run, Reason.TAKEN_OVER);
			}
			else if (assignment.state() == AssignmentState.REVOKING) {
				drain(run, Reason.REVOKED);
			}
		}
		this.acknowledgementsSent.keySet().removeIf((daemon) -> !isSentFor(snapshot.assignment(daemon).orElse(null)));
		this.acknowledgeFailures.keySet().retainAll(this.acknowledgementsSent.keySet());
		for (Assignment assignment : snapshot.assignments()) {
			if (assignment.isLive() && this.nodeId.equals(assignment.node()) && !isRunning(assignment)) {
				take(assignment);
			}
		}
		for (AgentRun run : List.copyOf(this.runs.values())) {
			if (run.draining) {
				finishDrain(run);
			}
		}
	}

	/**
	 * Marks this node drained, so that the leader does not give the daemons straight
	 * back, cancels every daemon, waits up to the drain timeout for the agents to return
	 * and hands the daemons back.
	 */
	void handOver() {
		try {
			// Still alive and now the least loaded: without the flag the leader would
			// give the daemons straight back.
			this.drainedByStop = this.store.drain(this.nodeId, true);
		}
		catch (RuntimeException ex) {
			logger.warn("Daemon node " + this.nodeId + " could not mark itself drained before handing over: " + ex);
		}
		List<AgentRun> draining = List.copyOf(this.runs.values());
		draining.forEach((run) -> drain(run, Reason.SHUTDOWN));
		handBackUnstarted();
		for (AgentRun run : draining) {
			long left = run.drainDeadline - System.nanoTime();
			try {
				run.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
			run.drainDeadline = System.nanoTime();
			try {
				finishDrain(run);
			}
			catch (RuntimeException ex) {
				logger.warn("Daemon node " + this.nodeId + " could not hand " + run.name() + " back; the leader "
						+ "reclaims it once this node is gone: " + ex);
			}
		}
		logger.info(String.format("Daemon node %s stopped, handed back %s", this.nodeId,
				draining.stream().map(AgentRun::name).toList()));
	}

	/**
	 * Undoes the drain of the last {@link #handOver()}, if it marked this node drained.
	 */
	void undrainAfterStop() {
		if (!this.drainedByStop) {
			return;
		}
		this.drainedByStop = false;
		try {
			// False when the engine deregistered the node on its own stop: it registers
			// again undrained.
			if (this.store.drain(this.nodeId, false)) {
				logger.info(String.format("Daemon node=%s action=undrained by=%s", this.nodeId, this.nodeId));
			}
		}
		catch (RuntimeException ex) {
			logger.warn("Daemon node " + this.nodeId + " could not undo the drain of its last stop; it gets no "
					+ "daemons until undrained: " + ex);
		}
	}

	/**
	 * Stops every daemon at once if this node's last heartbeat is not recent, since other
	 * nodes may then declare it dead and take its daemons over, or if its last read of
	 * the assignments is older than {@link #readLimit()}, since the leader may then have
	 * revoked and reclaimed them unseen. Runs on the {@code leader-daemons-watchdog}
	 * thread.
	 */
	void checkContact() {
		if (this.runs.isEmpty() || stopRunsOfEarlierSessions()) {
			return;
		}
		String why;
		if (!this.node.heartbeatIsRecent()) {
			why = "sent its last heartbeat that succeeded more than " + this.node.heartbeatLimit()
					+ " ago (node expiry minus safety margin)";
		}
		else if (System.nanoTime() - this.lastReadSent >= readLimit().toNanos()) {
			why = "sent its last read of the assignments that succeeded more than " + readLimit()
					+ " ago (drain timeout plus poll interval minus safety margin)";
		}
		else {
			return;
		}
		logger.warn("Daemon node " + this.nodeId + " " + why + "; stopping its daemons, other nodes may take them "
				+ "over");
		List.copyOf(this.runs.values()).forEach((run) -> stopAtOnce(run, Reason.CONTACT_LOST));
	}

	/**
	 * Stops every daemon started before the session that binds this node last ended.
	 * @return whether it stopped any
	 */
	private boolean stopRunsOfEarlierSessions() {
		long sessionsLost = this.node.sessionsLost();
		List<AgentRun> unbound = this.runs.values().stream().filter((run) -> run.sessionEpoch != sessionsLost).toList();
		if (unbound.isEmpty()) {
			return false;
		}
		logger.warn("Daemon node " + this.nodeId + " lost the database session that binds it; stopping its daemons, "
				+ "the leader may give them to other nodes at once");
		unbound.forEach((run) -> stopAtOnce(run, Reason.SESSION_LOST));
		this.runEnded.run();
		return true;
	}

	/**
	 * Returns how long after the send of its last read of the assignments this node keeps
	 * its daemons: a revoke written after that read is reclaimed by the leader the drain
	 * timeout plus a poll interval after it, by the database clock.
	 * @return the drain timeout plus the poll interval, minus the safety margin
	 */
	private Duration readLimit() {
		return this.settings.drainTimeout().plus(this.node.pollInterval()).minus(this.node.lease().safetyMargin());
	}

	private boolean isRunning(Assignment assignment) {
		AgentRun run = this.runs.get(assignment.daemon());
		return run != null && run.generation() == assignment.generation();
	}

	private void take(Assignment assignment) {
		String daemon = assignment.daemon();
		DaemonAgent agent = this.agents.get(daemon);
		// Found ACTIVE after an acknowledgement of this node whose reply was lost.
		boolean acknowledged = assignment.state() == AssignmentState.ACTIVE && isSentFor(assignment);
		if (agent == null || (assignment.state() != AssignmentState.ASSIGNING && !acknowledged)) {
			// Not started by this process: it restarted with the same node id, or lacks
			// the daemon. Handing it back lets the leader reassign it now rather than
			// after a timeout; only once this process's heartbeats succeed, since another
			// live process with the same id keeps the registration, and runs it.
			if (!this.node.heartbeatIsRecent()) {
				return;
			}
			this.acknowledgementsSent.remove(daemon);
			if (this.store.release(this.nodeId, daemon, assignment.generation())) {
				logger.info(String.format("Daemon daemon=%s node=%s action=handed-back generation=%d state=%s", daemon,
						this.nodeId, assignment.generation(), assignment.state()));
			}
			return;
		}
		if (!this.node.heartbeatIsRecent() || this.runs.containsKey(daemon)) {
			return;
		}
		// Read before the node's session ended: the leader may count the node dead.
		long epoch = this.node.sessionsLost();
		if (epoch != this.reconciledEpoch || this.node.sessionLostSince(this.lastReadSent)
				|| (!acknowledged && !acknowledge(assignment))) {
			return;
		}
		// The acknowledgement may have waited long for its reply, and the node's session
		// may have ended meanwhile: then the assignment, not run, is handed back.
		if (this.node.heartbeatIsRecent() && this.node.sessionsLost() == epoch) {
			start(assignment, agent, epoch);
		}
	}

	/**
	 * Marks an assignment read ASSIGNING to this node ACTIVE, if it still is.
	 * @param assignment the assignment as read
	 * @return whether it changed, so that its agent may start
	 */
	private boolean acknowledge(Assignment assignment) {
		this.acknowledgementsSent.put(assignment.daemon(), assignment.generation());
		try {
			if (this.store.acknowledge(this.nodeId, assignment.daemon(), assignment.generation())) {
				return true;
			}
			// Revoked or reclaimed since the read, or acknowledged by an earlier attempt
			// that failed after it committed: the next read tells.
			logger.debug(String.format(
					"Daemon daemon=%s node=%s generation=%d: the acknowledgement changed nothing, "
							+ "the assignment was read before it changed",
					assignment.daemon(), this.nodeId, assignment.generation()));
		}
		catch (RuntimeException ex) {
			int failures = this.acknowledgeFailures.merge(assignment.daemon(), 1, Integer::sum);
			logger.warn(String.format(
					"Daemon daemon=%s node=%s action=ack-failed generation=%d ack-failures=%d; not started, "
							+ "retrying next cycle while it is ASSIGNING, the ack timeout is %s: %s",
					assignment.daemon(), this.nodeId, assignment.generation(), failures, this.settings.ackTimeout(),
					ex));
		}
		return false;
	}

	private void start(Assignment assignment, DaemonAgent agent, long sessionEpoch) {
		String daemon = assignment.daemon();
		this.acknowledgementsSent.remove(daemon);
		Integer failures = this.acknowledgeFailures.remove(daemon);
		this.events.accept(new DaemonAssignedEvent(daemon, assignment.generation(), this.nodeId));
		AgentRun run = new AgentRun(daemon, assignment.generation(), agent, this.nodeId, this.store, this.events,
				this.runEnded, this.backoff);
		run.sessionEpoch = sessionEpoch;
		this.runs.put(daemon, run);
		run.start();
		logger.info(String.format("Daemon daemon=%s node=%s action=started generation=%d%s", daemon, this.nodeId,
				assignment.generation(), (failures != null) ? " ack-failures=" + failures : ""));
	}

	/**
	 * Returns whether this node sent an acknowledgement for an assignment that is still
	 * live on this node with the same generation, and has not started it.
	 * @param assignment the assignment as read, or {@code null}
	 * @return whether it did
	 */
	private boolean isSentFor(@Nullable Assignment assignment) {
		return assignment != null && assignment.isLive() && this.nodeId.equals(assignment.node())
				&& Long.valueOf(assignment.generation()).equals(this.acknowledgementsSent.get(assignment.daemon()));
	}

	/**
	 * Hands back the assignments this node acknowledged, or tried to, without starting
	 * them, so that the leader reassigns them without waiting for the ack timeout.
	 */
	private void handBackUnstarted() {
		this.acknowledgementsSent.forEach((daemon, generation) -> {
			try {
				if (this.store.release(this.nodeId, daemon, generation)) {
					logger.info(String.format("Daemon daemon=%s node=%s action=handed-back generation=%d", daemon,
							this.nodeId, generation));
				}
			}
			catch (RuntimeException ex) {
				logger.warn("Daemon node " + this.nodeId + " could not hand " + daemon + " back; the leader reclaims "
						+ "it at the ack timeout or once this node is gone: " + ex);
			}
		});
		this.acknowledgementsSent.clear();
		this.acknowledgeFailures.clear();
	}

	private void drain(AgentRun run, Reason reason) {
		if (run.draining) {
			return;
		}
		run.draining = true;
		run.drainDeadline = System.nanoTime() + this.settings.drainTimeout().toNanos();
		if (reason == Reason.REVOKED) {
			this.events.accept(new DaemonRevokedEvent(run.name(), run.generation(), this.nodeId));
		}
		run.cancel(reason);
		logger.info(String.format("Daemon daemon=%s node=%s action=draining generation=%d reason=%s", run.name(),
				this.nodeId, run.generation(), reason));
	}

	private void finishDrain(AgentRun run) {
		boolean returned = !run.isAlive();
		if (!returned && System.nanoTime() - run.drainDeadline < 0) {
			return;
		}
		if (!returned) {
			// Reported before the interrupt: the agent's thread would otherwise report
			// the drain's own reason.
			run.end(Reason.DRAIN_TIMEOUT);
			run.interrupt();
			logger.warn(String.format("Daemon daemon=%s node=%s action=forced generation=%d: the agent did not "
					+ "return within leader.daemons.drain-timeout (%s); its thread was interrupted and its guarded "
					+ "writes are rejected from now on", run.name(), this.nodeId, run.generation(),
					this.settings.drainTimeout()));
		}
		this.runs.remove(run.name(), run);
		if (this.store.release(this.nodeId, run.name(), run.generation())) {
			logger.info(String.format("Daemon daemon=%s node=%s action=released generation=%d", run.name(), this.nodeId,
					run.generation()));
		}
	}

	// Called from the leader-daemons and leader-daemons-watchdog threads.

	private void stopAtOnce(AgentRun run, Reason reason) {
		run.cancel(reason);
		run.interrupt();
		run.end(reason);
		if (this.runs.remove(run.name(), run)) {
			logger.warn(String.format("Daemon daemon=%s node=%s action=stopped generation=%d reason=%s", run.name(),
					this.nodeId, run.generation(), reason));
		}
	}

}
