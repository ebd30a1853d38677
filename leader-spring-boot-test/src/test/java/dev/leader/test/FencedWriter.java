package dev.leader.test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import dev.leader.FencingToken;
import dev.leader.Leadership;
import dev.leader.StaleLeadershipException;
import dev.leader.fencing.Fencing;
import dev.leader.test.NodeEvent.Type;

/**
 * The fenced writes of a {@link TestNode} started with {@code --writer=true}: every
 * interval, for every group, one transaction that {@link Fencing#guard guards} the
 * group's lease and then appends a row to the log table,
 * {@code (group_name, term, node, incarnation, seq, stamp_nanos)}. {@code seq} counts
 * this process's attempts, and {@code stamp_nanos} is {@link System#nanoTime()} taken
 * after the guard passed and before the commit, so every committed row happened while its
 * term held the lease.
 * <p>
 * The writer writes under {@link Leadership#token(String)} while the node leads. After
 * the node loses a group it goes on writing under the last token it had, until the
 * database rejects one: it behaves like a batch that began before the node was deposed,
 * or a node that learns of its demotion only from the fence. Those writes must be
 * rejected once another term can hold the lease, and the checkers of the fault harness
 * prove it. A rejection is printed as {@code REJECTED}, any other failure as
 * {@code FAILED}; committed writes are read back from the table.
 * <p>
 * Runs on a thread of its own, at a fixed delay, for at most a given number of attempts.
 */
final class FencedWriter {

	private final FencedLog log;

	private final Duration interval;

	private final long maxAttempts;

	private final Map<String, FencingToken> lastTokens = new ConcurrentHashMap<>();

	private final AtomicLong attempts = new AtomicLong();

	private final ScheduledExecutorService executor = Executors.newSingleThreadScheduledExecutor((runnable) -> {
		Thread thread = new Thread(runnable, "test-node-writer");
		thread.setDaemon(true);
		return thread;
	});

	FencedWriter(FencedLog log, Duration interval, long maxAttempts) {
		this.log = log;
		this.interval = interval;
		this.maxAttempts = maxAttempts;
	}

	void start() {
		this.executor.scheduleWithFixedDelay(this::writeRound, 0, this.interval.toNanos(), TimeUnit.NANOSECONDS);
	}

	void stop() {
		this.executor.shutdownNow();
		try {
			this.executor.awaitTermination(5, TimeUnit.SECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	private void writeRound() {
		for (String group : List.copyOf(this.log.leadership().groups())) {
			if (this.attempts.get() >= this.maxAttempts) {
				this.executor.shutdown();
				return;
			}
			write(group);
		}
	}

	private void write(String group) {
		FencingToken token = this.log.leadership().token(group).orElse(null);
		if (token != null) {
			this.lastTokens.put(group, token);
		}
		else {
			token = this.lastTokens.get(group);
			if (token == null) {
				return;
			}
		}
		FencingToken writing = token;
		long seq = this.attempts.incrementAndGet();
		try {
			this.log.append(writing, seq, null);
		}
		catch (StaleLeadershipException ex) {
			this.lastTokens.remove(group, writing);
			this.log.print(Type.REJECTED, writing);
		}
		catch (RuntimeException ex) {
			this.log.print(Type.FAILED, writing);
			System.err.println("Fenced write " + seq + " under " + writing + " failed: " + ex);
		}
	}

}
