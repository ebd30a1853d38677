/**
 * Daemon assignment: the leader of the daemons group hands every
 * {@link dev.leader.DaemonAgent} to one live node that can run it, through ASSIGNING,
 * ACTIVE, REVOKING and DELETED, and every node runs what it is given.
 * <p>
 * {@link dev.leader.daemon.DaemonCoordinator} is the lifecycle component;
 * {@link dev.leader.daemon.DaemonStatus} is its read-only view,
 * {@link dev.leader.daemon.AssignmentPlanner} the leader's decisions as a pure function,
 * {@link dev.leader.daemon.DaemonStore} the seam to the database, and
 * {@link dev.leader.daemon.DaemonObservations} names the observations. The rest is
 * package-private: the cycle loop ({@code DaemonCycles}), the leader's side of a cycle
 * ({@code LeaderCycle}), the node's side ({@code NodeReconciler}), one agent's run
 * ({@code AgentRun}) and the operators' requests ({@code DaemonOperations}).
 * <h2>Threads</h2>
 * <ul>
 * <li>{@code leader-daemons}, one per coordinator: every cycle, so the leader's plan and
 * writes and the node's starts, acknowledgements, drains and hand-backs; the undrain at
 * start and the hand-over at stop. Cycles never overlap.</li>
 * <li>{@code leader-daemons-watchdog}: every 100 ms, stops all daemons at once when the
 * last heartbeat that succeeded was sent more than the node expiry minus the safety
 * margin ago.</li>
 * <li>{@code leader-daemon-events}: publishes the daemon events one at a time, in the
 * order they were published ({@link dev.leader.node.OrderedEvents}); a failing listener
 * is logged and delivery goes on.</li>
 * <li>{@code leader-daemon-<name>}, one per running assignment: calls the agent, and
 * again after a back-off while it throws or returns uncancelled; once it returns after a
 * cancellation, it wakes the cycles so the daemon is handed back at once.</li>
 * <li>The engine's heartbeat thread delivers the snapshot read with the heartbeat, and
 * the store's notification thread delivers change notifications; both only schedule a
 * cycle and return. {@code wake()} (node joined or left, leadership granted) does the
 * same on the publishing thread.</li>
 * <li>Any thread may call the operations and the status view; they touch no state of the
 * cycles but what is listed as shared below.</li>
 * </ul>
 * <h2>Locks and shared state</h2>
 * <ul>
 * <li>The coordinator's {@code lifecycleLock} guards the transitions of {@code running},
 * so that one stop alone proceeds; its {@code threadsLock} is held while a start or a
 * stop creates or tears down the threads, so that a start waits until those of the
 * previous run have ended. Neither is held during a cycle or a store call of a
 * cycle.</li>
 * <li>The runs of the node ({@code NodeReconciler.runs}) are a concurrent map, written by
 * {@code leader-daemons} and by the watchdog's stops; removals name the run, so that a
 * late stop of an old run never removes its successor.</li>
 * <li>An {@code AgentRun}'s cancellation is a latch, its reason and flags are volatile,
 * and its stop is published once through a compare-and-set. The acknowledgements a node
 * sent for daemons it has not started ({@code NodeReconciler.acknowledgementsSent}) are
 * confined to {@code leader-daemons}.</li>
 * <li>The leader's memory of its term and live nodes ({@code LeaderCycle}) and the next
 * scheduled cycle are confined to {@code leader-daemons}; the move counts are atomic
 * counters in a concurrent map.</li>
 * <li>The last snapshot read is volatile and replaced whole; pending wake-ups and
 * heartbeat snapshots are atomics, so that those arriving while one is pending are
 * merged.</li>
 * </ul>
 * No lock is held while a store statement runs, an agent is called or an event is
 * published.
 */
@NullMarked
package dev.leader.daemon;

import org.jspecify.annotations.NullMarked;
