package dev.leader.test;

import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.jspecify.annotations.Nullable;

/**
 * A fault injected again and again at a fixed rate, on a thread of its own, from
 * {@link #start} until {@link #close()}, and at most a given number of times. Use it in
 * try-with-resources, so that the fault stops whatever the test's outcome;
 * {@link #close()} rethrows the first failure of the fault itself.
 */
public final class RepeatedFault implements AutoCloseable {

	private final String name;

	private final int maxRounds;

	private final ScheduledExecutorService executor;

	private final AtomicInteger rounds = new AtomicInteger();

	private final AtomicReference<@Nullable Throwable> failure = new AtomicReference<>();

	private RepeatedFault(String name, int maxRounds) {
		this.name = name;
		this.maxRounds = maxRounds;
		this.executor = Executors.newSingleThreadScheduledExecutor((runnable) -> {
			Thread thread = new Thread(runnable, "fault-" + name);
			thread.setDaemon(true);
			return thread;
		});
	}

	/**
	 * Starts injecting a fault: at once, then every period, until closed or until it has
	 * run the given number of times.
	 * @param name what the fault is, for thread names and messages
	 * @param period the time between the starts of two rounds
	 * @param maxRounds how many rounds to run at most
	 * @param fault one round of the fault
	 * @return the running fault
	 */
	public static RepeatedFault start(String name, Duration period, int maxRounds, Runnable fault) {
		RepeatedFault repeated = new RepeatedFault(name, maxRounds);
		repeated.executor.scheduleAtFixedRate(() -> repeated.round(fault), 0, period.toNanos(), TimeUnit.NANOSECONDS);
		return repeated;
	}

	/**
	 * Returns how many rounds have run.
	 * @return the rounds
	 */
	public int rounds() {
		return this.rounds.get();
	}

	/**
	 * Stops the fault, waiting for a running round to finish.
	 * @throws IllegalStateException if a round failed, or a round does not finish within
	 * a few seconds
	 */
	@Override
	public void close() {
		this.executor.shutdownNow();
		try {
			if (!this.executor.awaitTermination(5, TimeUnit.SECONDS)) {
				throw new IllegalStateException("Fault '" + this.name + "' did not stop");
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		Throwable failed = this.failure.get();
		if (failed != null) {
			throw new IllegalStateException("Fault '" + this.name + "' failed in round " + this.rounds(), failed);
		}
	}

	private void round(Runnable fault) {
		if (this.rounds.get() >= this.maxRounds || this.failure.get() != null) {
			this.executor.shutdown();
			return;
		}
		this.rounds.incrementAndGet();
		try {
			fault.run();
		}
		catch (Throwable ex) {
			this.failure.compareAndSet(null, ex);
		}
	}

}
