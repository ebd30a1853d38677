package dev.leader.daemon;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

import dev.leader.FencingToken;
import dev.leader.daemon.DaemonObservations.CycleKeys;
import dev.leader.node.FailureWarnings;
import dev.leader.node.OwnThreads;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * The {@code leader-daemons} thread and what triggers its cycles. Each cycle reads the
 * nodes and assignments (or takes the heartbeat's snapshot when it agrees with the last
 * read), lets the {@link LeaderCycle} plan and apply when this node leads the daemons
 * group, reading again if that changed anything, and lets the {@link NodeReconciler}
 * follow the result. A cycle runs with each heartbeat that delivers a snapshot, else once
 * per renew interval on its own schedule; at once on a {@linkplain #wake() wake-up}; and
 * when the store notifies a change this node must act on. Wake-ups and snapshots that
 * arrive while one is pending are merged. A failing cycle is logged and the next one
 * tries again.
 */
final class DaemonCycles {

	// The coordinator's category, which operators' logging configuration and alerts
	// already name.
	private static final Log logger = LogFactory.getLog(DaemonCoordinator.class);

	private final LocalNode node;

	private final String nodeId;

	private final DaemonStore store;

	private final LeaderCycle leader;

	private final NodeReconciler reconciler;

	private final OwnThreads threads;

	private final BooleanSupplier running;

	// Called on leader-daemons only.
	private final FailureWarnings failures;

	private final AtomicBoolean wakePending = new AtomicBoolean();

	private final AtomicReference<@Nullable Polled> polled = new AtomicReference<>();

	// Replaced when the coordinator starts again: a stop shuts it down, so that it leaves
	// no thread behind.
	private volatile ScheduledExecutorService executor;

	private volatile @Nullable DaemonSnapshot lastRead;

	private volatile ObservationRegistry observationRegistry = ObservationRegistry.NOOP;

	private @Nullable AutoCloseable notifications;

	// Null when the store cannot read the assignments with the heartbeat: the cycles then
	// schedule their own reads.
	private volatile @Nullable AutoCloseable heartbeats;

	// On the leader-daemons thread only.
	private @Nullable ScheduledFuture<?> nextCycle;

	/**
	 * Creates the loop; its thread starts with the first cycle.
	 * @param node this node
	 * @param store the store
	 * @param leader the leader's side of a cycle
	 * @param reconciler the node's side of a cycle
	 * @param threads the coordinator's threads, which its stop waits for
	 * @param running whether the coordinator runs: no cycle starts, and none is
	 * scheduled, while it does not
	 */
	DaemonCycles(LocalNode node, DaemonStore store, LeaderCycle leader, NodeReconciler reconciler, OwnThreads threads,
			BooleanSupplier running) {
		this.node = node;
		this.nodeId = node.id();
		this.store = store;
		this.leader = leader;
		this.reconciler = reconciler;
		this.threads = threads;
		this.running = running;
		this.executor = newExecutor();
		this.failures = new FailureWarnings(logger, "Daemon node " + this.nodeId + " cycle", FailureWarnings.REPEAT);
	}

	void setObservationRegistry(ObservationRegistry observationRegistry) {
		this.observationRegistry = observationRegistry;
	}

	/**
	 * Returns the snapshot the last cycle ended with.
	 * @return the snapshot, or {@code null} before the first cycle
	 */
	@Nullable DaemonSnapshot lastRead() {
		return this.lastRead;
	}

	/**
	 * Makes ready for a start, with a new thread after a stop. Called before the
	 * coordinator counts as running.
	 */
	void prepare() {
		if (this.executor.isShutdown()) {
			this.executor = newExecutor();
		}
		// A wake-up or snapshot pending when the last run stopped was dropped with its
		// thread: without this, the flags would keep every later one from being
		// scheduled.
		this.wakePending.set(false);
		this.polled.set(null);
	}

	/**
	 * Follows the store's notifications and heartbeat snapshots, and runs the first
	 * cycle, after undoing the drain of the last stop. Called once the coordinator counts
	 * as running.
	 */
	void start() {
		this.notifications = this.store.listen(this::notified);
		this.heartbeats = this.store.followHeartbeat(this::polled);
		this.executor.execute(() -> {
			this.reconciler.undrainAfterStop();
			cycle(null);
		});
	}

	/**
	 * Stops following the store's notifications and heartbeat snapshots.
	 */
	void stopFollowing() {
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

	/**
	 * Hands the daemons over on the {@code leader-daemons} thread, after the cycle it may
	 * be running, then ends the thread.
	 * @param timeout how long to wait for the hand-over
	 */
	void handOverAndShutdown(Duration timeout) {
		Future<?> handOver = this.executor.submit(() -> {
			cancel(this.nextCycle);
			this.reconciler.handOver();
		});
		try {
			handOver.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		catch (Exception ex) {
			logger.warn("Daemon node " + this.nodeId + " could not hand its daemons over cleanly: " + ex);
		}
		this.executor.shutdownNow();
	}

	/**
	 * Runs a cycle soon, on the {@code leader-daemons} thread. Wake-ups that arrive while
	 * one is pending are merged.
	 */
	void wake() {
		if (!this.running.getAsBoolean() || !this.wakePending.compareAndSet(false, true)) {
			return;
		}
		try {
			this.executor.execute(() -> {
				this.wakePending.set(false);
				cycle(null);
			});
		}
		catch (RejectedExecutionException ex) {
			// stopping
		}
	}

	// Runs on the thread that sent the heartbeat. Only the newest snapshot waits for the
	// cycles thread.

	private void polled(DaemonSnapshot snapshot) {
		// The heartbeat that read it was sent no later than the last one that succeeded
		// so far.
		long sentAt = System.nanoTime()
				- this.node.sinceLastHeartbeat().map(Duration::toNanos).orElse(TimeUnit.DAYS.toNanos(1));
		if (!this.running.getAsBoolean() || this.polled.getAndSet(new Polled(snapshot, sentAt)) != null) {
			return;
		}
		try {
			this.executor.execute(() -> cycle(this.polled.getAndSet(null)));
		}
		catch (RejectedExecutionException ex) {
			// stopping
		}
	}

	// Runs on the store's notification thread.

	private void notified(String node) {
		if (node.isEmpty() ? this.node.leads() : node.equals(this.nodeId)) {
			wake();
		}
	}

	/**
	 * Runs a cycle on the snapshot read with a heartbeat, or on a fresh read. Runs on the
	 * {@code leader-daemons} thread.
	 * @param polled the heartbeat's snapshot, or {@code null} to read
	 */
	private void cycle(@Nullable Polled polled) {
		if (!this.running.getAsBoolean()) {
			return;
		}
		cancel(this.nextCycle);
		Optional<FencingToken> token = this.node.token();
		Observation observation = DaemonObservations.CYCLE.observation(this.observationRegistry)
			.lowCardinalityKeyValue(CycleKeys.ROLE.withValue(token.isPresent() ? "leader" : "node"));
		try (Observation.Scope scope = observation.start().openScope()) {
			Duration nodeExpiry = this.node.lease().nodeExpiry();
			DaemonSnapshot snapshot;
			long sentAt;
			if (polled != null && polled.snapshot().sameStateAs(this.lastRead)) {
				snapshot = polled.snapshot();
				sentAt = polled.sentAt();
			}
			else {
				sentAt = System.nanoTime();
				snapshot = this.store.read(nodeExpiry);
			}
			if (token.isPresent()) {
				if (this.leader.lead(snapshot, token.get())) {
					sentAt = System.nanoTime();
					snapshot = this.store.read(nodeExpiry);
				}
			}
			else {
				this.leader.notLeading();
			}
			this.lastRead = snapshot;
			this.reconciler.reconcile(snapshot, sentAt);
			this.failures.succeeded(System.nanoTime());
		}
		catch (RuntimeException ex) {
			observation.error(ex);
			this.failures.failed(System.nanoTime(), ex, "retrying every cycle");
		}
		finally {
			observation.stop();
		}
		if (this.running.getAsBoolean() && this.heartbeats == null) {
			try {
				this.nextCycle = this.executor.schedule(() -> cycle(null), this.node.pollInterval().toNanos(),
						TimeUnit.NANOSECONDS);
			}
			catch (RejectedExecutionException ex) {
				// stopping
			}
		}
	}

	private ScheduledExecutorService newExecutor() {
		return Executors.newSingleThreadScheduledExecutor(this.threads.named("leader-daemons"));
	}

	private static void cancel(@Nullable Future<?> future) {
		if (future != null) {
			future.cancel(false);
		}
	}

	/**
	 * A heartbeat's snapshot and when that heartbeat was sent, or earlier.
	 */
	private record Polled(DaemonSnapshot snapshot, long sentAt) {
	}

}
