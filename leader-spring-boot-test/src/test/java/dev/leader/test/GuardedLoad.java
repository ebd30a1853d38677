package dev.leader.test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import dev.leader.FencingToken;
import dev.leader.Leadership;
import dev.leader.StaleLeadershipException;
import dev.leader.fencing.Fencing;
import dev.leader.test.NodeEvent.Type;

/**
 * Guarded-write load of a {@link TestNode} started with {@code --load-threads=N}: while
 * the node leads a group, as {@link Leadership#token(String)} tells, each of N threads
 * runs transactions back to back that {@link Fencing#guard guard} the group's lease, hold
 * the transaction open for a while ({@code pg_sleep}), and append a row to the load
 * table, {@code (group_name, term, node, incarnation, seq, stamp_nanos)} as in
 * {@link FencedWriter}'s log table, with {@code stamp_nanos} taken after the hold, just
 * before the commit. The lease row of every group the node leads is so share-locked by
 * guarded transactions nearly all the time, as an application under load would keep it,
 * and the holder's renewals must go through regardless (G3).
 * <p>
 * Unlike {@link FencedWriter}, the load never writes under a token it no longer has. A
 * transaction that the guard rejects is printed as {@code LOAD_REJECTED}, any other
 * failure as {@code LOAD_FAILED}, followed by a pause of one hold so that a broken pool
 * is not hammered; both are expected around faults. Each thread alternates between the
 * groups the node leads, starting at a different one, and waits a few milliseconds when
 * it leads none. The threads stop after a given number of transactions in all, or at
 * {@link #stop()}.
 */
final class GuardedLoad {

	private static final long IDLE_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

	private final FencedLog log;

	private final Duration hold;

	private final long maxTransactions;

	private final AtomicLong attempts = new AtomicLong();

	private final List<Thread> threads = new ArrayList<>();

	private volatile boolean stopped;

	GuardedLoad(FencedLog log, int threads, Duration holdLimit, Duration hold, long maxTransactions) {
		if (hold.isNegative() || hold.compareTo(holdLimit.dividedBy(2)) > 0) {
			throw new IllegalArgumentException("The load's hold " + hold + " must be between 0 and half the guard's "
					+ "hold limit " + holdLimit + ", or the database ends the load's transactions");
		}
		this.log = log;
		this.hold = hold;
		this.maxTransactions = maxTransactions;
		for (int i = 0; i < threads; i++) {
			int index = i;
			Thread thread = new Thread(() -> run(index), "test-node-load-" + i);
			thread.setDaemon(true);
			this.threads.add(thread);
		}
	}

	void start() {
		this.threads.forEach(Thread::start);
	}

	/**
	 * Stops the threads and waits until their transactions have ended, at most a few
	 * seconds.
	 */
	void stop() {
		this.stopped = true;
		this.threads.forEach(Thread::interrupt);
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
		for (Thread thread : this.threads) {
			try {
				thread.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				return;
			}
		}
	}

	private void run(int index) {
		while (!this.stopped && this.attempts.get() < this.maxTransactions) {
			List<String> groups = List.copyOf(this.log.leadership().groups());
			boolean led = false;
			for (int i = 0; i < groups.size() && !this.stopped; i++) {
				FencingToken token = this.log.leadership().token(groups.get((index + i) % groups.size())).orElse(null);
				if (token != null) {
					led = true;
					transaction(token);
				}
			}
			if (!led) {
				LockSupport.parkNanos(IDLE_NANOS);
			}
		}
	}

	private void transaction(FencingToken token) {
		long seq = this.attempts.incrementAndGet();
		try {
			this.log.append(token, seq, this.hold);
		}
		catch (StaleLeadershipException ex) {
			this.log.print(Type.LOAD_REJECTED, token);
		}
		catch (RuntimeException ex) {
			if (this.stopped) {
				return;
			}
			this.log.print(Type.LOAD_FAILED, token);
			System.err.println("Load transaction " + seq + " under " + token + " failed: " + ex);
			LockSupport.parkNanos(this.hold.toNanos());
		}
	}

}
