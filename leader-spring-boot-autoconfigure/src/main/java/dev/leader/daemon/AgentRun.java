package dev.leader.daemon;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

import dev.leader.DaemonAgent;
import dev.leader.DaemonContext;
import dev.leader.DaemonStartedEvent;
import dev.leader.DaemonStoppedEvent;
import dev.leader.DaemonStoppedEvent.Reason;
import dev.leader.StaleLeadershipException;
import dev.leader.node.OwnThreads;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * One assignment running on this node, and the context its agent sees. The agent runs on
 * a {@code leader-daemon-<name>} thread of its own, started by {@link #start()}, and is
 * called again after a {@link Backoff back-off} each time it throws or returns while not
 * cancelled, until the run is {@linkplain #cancel(Reason) cancelled}. Each call is
 * published as a {@link DaemonStartedEvent}, and its end as a {@link DaemonStoppedEvent},
 * exactly once: by the agent's thread for a failure, a return or a cancellation it saw,
 * or by {@link #end(Reason)} for a stop forced from outside. Once the agent has returned
 * after a cancellation, the run calls its {@code ended} callback, so that the node hands
 * the daemon back without waiting for its next poll.
 */
final class AgentRun implements DaemonContext {

	// The coordinator's category, which operators' logging configuration and alerts
	// already name.
	private static final Log logger = LogFactory.getLog(DaemonCoordinator.class);

	private final String daemon;

	private final long generation;

	private final DaemonAgent agent;

	private final String nodeId;

	private final @Nullable DaemonGuard guard;

	private final Consumer<Object> events;

	private final Runnable ended;

	private final Backoff backoff;

	private final Thread thread;

	private final CountDownLatch cancelled = new CountDownLatch(1);

	private final AtomicBoolean stopPublished = new AtomicBoolean();

	private volatile Reason reason = Reason.SHUTDOWN;

	private volatile boolean started;

	// Owned by the NodeReconciler: written on the leader-daemons thread, read by the
	// watchdog too.

	volatile boolean draining;

	volatile long drainDeadline;

	// The node's count of lost sessions when the run's assignment was acknowledged: a
	// run of an earlier count is stopped (LocalNode#sessionsLost).
	volatile long sessionEpoch;

	/**
	 * Creates a run; its thread starts with {@link #start()}.
	 * @param daemon the daemon
	 * @param generation the generation of its assignment
	 * @param agent the agent
	 * @param nodeId this node's id
	 * @param store the store; the agent's writes are guarded only if it is also a
	 * {@link DaemonGuard}
	 * @param events receives the run's events
	 * @param ended called on the agent's thread once the agent has returned after a
	 * cancellation
	 * @param backoff the back-off between calls
	 */
	AgentRun(String daemon, long generation, DaemonAgent agent, String nodeId, DaemonStore store,
			Consumer<Object> events, Runnable ended, Backoff backoff) {
		this.daemon = daemon;
		this.generation = generation;
		this.agent = agent;
		this.nodeId = nodeId;
		this.guard = (store instanceof DaemonGuard daemonGuard) ? daemonGuard : null;
		this.events = events;
		this.ended = ended;
		this.backoff = backoff;
		this.thread = OwnThreads.daemon("leader-daemon-" + daemon, this::runAgent);
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
		DaemonGuard guard = this.guard;
		if (guard == null) {
			throw new UnsupportedOperationException("Daemon '" + this.daemon
					+ "' cannot guard a write inside the application's transaction: that needs the coordinator to be the application's SQL database");
		}
		Assignment assignment = guard.lock(this.daemon);
		String problem;
		if (assignment == null) {
			problem = "the daemon has no assignment";
		}
		else if (assignment.generation() != this.generation) {
			problem = "the assignment is at generation " + assignment.generation() + " on node " + assignment.node();
		}
		else if (!this.nodeId.equals(assignment.node())) {
			problem = "the assignment is on node " + assignment.node();
		}
		else if (!assignment.isLive()) {
			problem = "the assignment was deleted";
		}
		else {
			return;
		}
		throw new StaleLeadershipException(
				"Stale daemon assignment of '" + this.daemon + "': this write was " + "made under generation "
						+ this.generation + " on node " + this.nodeId + ", but " + problem,
				this.daemon, this.generation, (assignment != null) ? assignment.generation() : 0,
				(assignment != null && assignment.isLive()) ? assignment.node() : null);
	}

	void start() {
		this.thread.start();
	}

	boolean isAlive() {
		return this.thread.isAlive();
	}

	void interrupt() {
		this.thread.interrupt();
	}

	/**
	 * Waits for the agent's thread to end.
	 * @param millis the longest wait, at least 1
	 * @throws InterruptedException if the calling thread is interrupted
	 */
	void join(long millis) throws InterruptedException {
		this.thread.join(millis);
	}

	/**
	 * Cancels the run, once: a later reason is ignored.
	 * @param reason why, reported when the agent returns
	 */
	void cancel(Reason reason) {
		if (!isCancelled()) {
			this.reason = reason;
			this.cancelled.countDown();
		}
	}

	/**
	 * Publishes the stop of the current call of the agent, unless it was published
	 * already or the agent is between calls.
	 * @param reason why it stopped
	 */
	void end(Reason reason) {
		if (this.started && this.stopPublished.compareAndSet(false, true)) {
			this.events.accept(new DaemonStoppedEvent(this.daemon, this.generation, this.nodeId, reason, null));
		}
	}

	// Runs on the agent's own thread.

	private void runAgent() {
		Duration waited = Duration.ZERO;
		while (!isCancelled()) {
			this.started = true;
			this.events.accept(new DaemonStartedEvent(this.daemon, this.generation, this.nodeId));
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
			Duration wait = this.backoff.next(waited, Duration.ofNanos(System.nanoTime() - began), failure != null);
			waited = wait;
			if (failure != null) {
				logger.error(
						String.format("Daemon daemon=%s node=%s action=failed generation=%d; restarting in " + "%d ms",
								this.daemon, this.nodeId, this.generation, wait.toMillis()),
						failure);
			}
			else {
				logger.warn(String.format(
						"Daemon daemon=%s node=%s action=returned generation=%d while not "
								+ "cancelled; restarting in %d ms",
						this.daemon, this.nodeId, this.generation, wait.toMillis()));
			}
			this.events.accept(new DaemonStoppedEvent(this.daemon, this.generation, this.nodeId, outcome, failure));
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
		this.ended.run();
	}

	/**
	 * How long a run waits before it calls its agent again.
	 *
	 * @param initial the first wait, and the wait after a call that outlasted the last
	 * wait or returned
	 * @param max the longest wait
	 */
	record Backoff(Duration initial, Duration max) {

		/**
		 * One second, doubling up to 30 s.
		 */
		static final Backoff DEFAULT = new Backoff(Duration.ofSeconds(1), Duration.ofSeconds(30));

		/**
		 * Returns the wait after a call. It doubles only while the agent fails sooner
		 * than it waited: a call that outlasted its back-off was healthy, and a failure
		 * long after the last one (a database blip) is retried soon.
		 * @param waited the wait before the call, zero before the first
		 * @param ran how long the call ran
		 * @param failed whether it threw, rather than returned
		 * @return the wait before the next call
		 */
		Duration next(Duration waited, Duration ran, boolean failed) {
			if (!failed || ran.compareTo(waited) >= 0) {
				return this.initial;
			}
			Duration doubled = waited.multipliedBy(2);
			return (doubled.compareTo(this.max) <= 0) ? doubled : this.max;
		}

	}

}
