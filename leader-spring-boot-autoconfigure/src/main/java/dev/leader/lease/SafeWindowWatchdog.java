package dev.leader.lease;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import dev.leader.node.OwnThreads;

/**
 * Closes safe windows on time on its own thread, {@code leader-watchdog}, so that a node
 * steps down when its window runs out even while its round trip to the coordinator hangs
 * (G2). Each grant and renewal arms the group's closer for the end of the new window,
 * replacing the one before; the closer steps down only if the window it finds has closed.
 */
final class SafeWindowWatchdog {

	private static final Runnable NOTHING = () -> {
	};

	private final OwnThreads threads;

	private volatile ScheduledExecutorService executor;

	SafeWindowWatchdog(OwnThreads threads) {
		this.threads = threads;
		this.executor = newExecutor();
	}

	/**
	 * Starts the thread, replacing the one a {@link #stop()} ended, rather than with the
	 * first closer, which is a grant's.
	 */
	void start() {
		if (this.executor.isShutdown()) {
			this.executor = newExecutor();
		}
		this.executor.execute(NOTHING);
	}

	/**
	 * Arms the closer of the group's safe window for the moment it closes.
	 * @param group a group this node holds
	 */
	void arm(GroupLease group) {
		group.replaceExpiry(
				this.executor.schedule(group.windowCloser(), group.nanosUntilWindowCloses(), TimeUnit.NANOSECONDS));
	}

	/**
	 * Disarms the closer of the group's safe window.
	 * @param group the group
	 */
	void disarm(GroupLease group) {
		group.replaceExpiry(null);
	}

	/**
	 * Ends the thread; the engine's {@link OwnThreads#awaitEnd()} waits for it.
	 */
	void stop() {
		this.executor.shutdownNow();
	}

	private ScheduledExecutorService newExecutor() {
		return Executors.newSingleThreadScheduledExecutor(this.threads.named("leader-watchdog"));
	}

}
