package dev.leader.node;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;

/**
 * The named daemon threads of a lifecycle component, kept so that its stop can wait until
 * they have ended: an executor counts as terminated just before its thread ends, and a
 * stopped component must leave no thread behind. Thread-safe.
 * <p>
 * Internal, not for application use: public only because the {@code lease} and
 * {@code daemon} packages share it.
 */
public final class OwnThreads {

	private final List<Thread> threads = new CopyOnWriteArrayList<>();

	/**
	 * Returns a factory of daemon threads with the given name, each kept until
	 * {@link #awaitEnd()}.
	 * @param name the name of the threads, {@code leader-…}
	 * @return the factory
	 */
	public ThreadFactory named(String name) {
		return (runnable) -> {
			Thread thread = daemon(name, runnable);
			this.threads.add(thread);
			return thread;
		};
	}

	/**
	 * Returns a daemon thread, not started, that runs the task.
	 * @param name the name of the thread, {@code leader-…}
	 * @param task what the thread runs
	 * @return the thread
	 */
	public static Thread daemon(String name, Runnable task) {
		Thread thread = new Thread(task, name);
		thread.setDaemon(true);
		return thread;
	}

	/**
	 * Waits, up to 5 s in all, until every thread made so far has ended, then forgets
	 * them. A thread of the component that calls this does not wait for itself.
	 */
	public void awaitEnd() {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
		try {
			for (Thread thread : this.threads) {
				if (thread != Thread.currentThread()) {
					thread.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
				}
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		this.threads.clear();
	}

}
