package dev.leader.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.FencingToken;
import dev.leader.LeadershipRevokedEvent;
import dev.leader.fencing.Fencing;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.LeaderEngine;
import dev.leader.lease.LeaseObservations;
import dev.leader.lease.LeaseSettings;
import dev.leader.node.NodeRegistration;
import io.micrometer.common.KeyValue;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Guarded writes under load, and what they cost the leader's renewal: one
 * {@link LeaderEngine} holds the lease of one group, and N writer threads run
 * transactions back to back on the engine's own pool, as an application's threads would:
 * each transaction updates a row of its thread's, plain or after {@link Fencing#guard}
 * with the engine's token, and commits, guarded and plain in turns of a second. The
 * engine's heartbeats, the statement that renews its leases, are timed through its
 * {@link ObservationRegistry} ({@code leader.heartbeat} with {@code role=leader}), and
 * its revocations are counted from its events.
 * <p>
 * The settings are the defaults but for a 500 ms renew interval, so that 20 s of a mode
 * hold some 40 renewals rather than 7; the renewal statement is the same.
 */
final class GuardedWriteLoad implements AutoCloseable {

	static final LeaseSettings SETTINGS = new LeaseSettings(Duration.ofSeconds(10), Duration.ofMillis(500),
			Duration.ofSeconds(2), Duration.ofMillis(200), Duration.ofSeconds(10), Duration.ofSeconds(10));

	private static final String GROUP = "bench-guarded";

	private static final String NODE = "bench-leader";

	/**
	 * Run with the writers before each window, not counted: the pool opens its
	 * connections and the JIT compiles the loop.
	 */
	private static final Duration WARM_UP = Duration.ofSeconds(2);

	private static final String UPDATE = "UPDATE bench_guarded SET v = v + 1 WHERE thread = ?";

	private final HikariDataSource dataSource;

	private final JdbcTemplate jdbc;

	private final TransactionTemplate transactions;

	private final LeaderEngine engine;

	private final Fencing fencing;

	private final FencingToken token;

	private final List<LeadershipRevokedEvent> revocations;

	private final HeartbeatTimer heartbeats;

	private GuardedWriteLoad(HikariDataSource dataSource, LeaderEngine engine, Fencing fencing, FencingToken token,
			List<LeadershipRevokedEvent> revocations, HeartbeatTimer heartbeats) {
		this.dataSource = dataSource;
		this.jdbc = new JdbcTemplate(dataSource);
		this.transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
		this.engine = engine;
		this.fencing = fencing;
		this.token = token;
		this.revocations = revocations;
		this.heartbeats = heartbeats;
	}

	/**
	 * Creates the writers' rows and starts the leader, on empty tables of the starter.
	 * @param database the database
	 * @param maxThreads the most writer threads of any window
	 * @return the running benchmark, holding the lease
	 * @throws IllegalStateException if the engine does not take the lease within 30 s
	 */
	static GuardedWriteLoad start(BenchDatabase database, int maxThreads) throws InterruptedException {
		// The engine keeps a connection for its round trips and one to LISTEN (on MariaDB
		// one that holds its wake-up lock), and hands
		// the first back to the pool and borrows it again on every round trip: two more
		// than the writers, so that it never waits behind them.
		HikariDataSource dataSource = database.dataSource("bench-guarded", maxThreads + 2);
		JdbcTemplate jdbc = new JdbcTemplate(dataSource);
		jdbc.execute("DROP TABLE IF EXISTS bench_guarded");
		jdbc.execute("CREATE TABLE bench_guarded (thread INT PRIMARY KEY, v BIGINT NOT NULL)");
		for (int thread = 0; thread < maxThreads; thread++) {
			jdbc.update("INSERT INTO bench_guarded VALUES (?, 0)", thread);
		}
		List<LeadershipRevokedEvent> revocations = new CopyOnWriteArrayList<>();
		CoordinationStore coordination = database.dialect().coordinationStore(dataSource, Duration.ofSeconds(3));
		LeaderEngine engine = new LeaderEngine(coordination, SETTINGS,
				new NodeRegistration(NODE, NODE, "localhost", ProcessHandle.current().pid()), List.of(GROUP),
				(event) -> {
					if (event instanceof LeadershipRevokedEvent revoked) {
						revocations.add(revoked);
					}
				});
		HeartbeatTimer heartbeats = new HeartbeatTimer();
		ObservationRegistry observations = ObservationRegistry.create();
		observations.observationConfig().observationHandler(heartbeats);
		// As the auto-configuration builds it: a guard may hold the lease row for the
		// leader's safe window at most.
		Fencing fencing = new Fencing(
				database.dialect().fencingStore(dataSource, Duration.ofSeconds(3), SETTINGS.safeWindow(), coordination),
				NODE);
		engine.setObservationRegistry(observations);
		engine.start();
		if (!engine.awaitLeadership(GROUP, Duration.ofSeconds(30))) {
			engine.stop();
			dataSource.close();
			throw new IllegalStateException(NODE + " did not take the lease of " + GROUP + " within 30 s");
		}
		return new GuardedWriteLoad(dataSource, engine, fencing, engine.token(GROUP).orElseThrow(), revocations,
				heartbeats);
	}

	/**
	 * Times the leader's renewals for a window with no writers.
	 * @param window how long
	 * @return the renewal round trips, in milliseconds
	 */
	Stats renewals(Duration window) throws InterruptedException {
		List<Double> samples = Collections.synchronizedList(new ArrayList<>());
		this.heartbeats.samples = samples;
		try {
			TimeUnit.NANOSECONDS.sleep(window.toNanos());
		}
		finally {
			this.heartbeats.samples = null;
		}
		return snapshot(samples);
	}

	/**
	 * Runs the writers for a warm-up and then for twice the window, guarded and plain in
	 * turns of a second, so that both see the same machine: on a machine shared with
	 * other work, two windows one after the other can differ by more than the guard
	 * costs. Each transaction counts for the mode it started in; one that straddles a
	 * turn counts in the next turn of its mode.
	 * @param threads how many writer threads
	 * @param window how long to count each mode, in whole seconds
	 * @return the throughput of each mode, and the leader's renewals that started during
	 * its turns
	 */
	Comparison run(int threads, Duration window) throws InterruptedException {
		long seconds = window.toSeconds();
		if (seconds < 1) {
			throw new IllegalArgumentException("--guarded-window must be at least a second, was " + window);
		}
		Mode guarded = new Mode(true);
		Mode plain = new Mode(false);
		AtomicReference<Mode> current = new AtomicReference<>(guarded);
		AtomicBoolean stop = new AtomicBoolean();
		// A bound of its own for every writer, should the end never be signalled.
		long deadline = System.nanoTime() + WARM_UP.plus(window.multipliedBy(2)).plusSeconds(30).toNanos();
		AtomicInteger names = new AtomicInteger();
		ExecutorService writers = Executors.newFixedThreadPool(threads,
				(task) -> new Thread(task, "bench-writer-" + names.getAndIncrement()));
		for (int i = 0; i < threads; i++) {
			int row = i;
			writers.execute(() -> {
				while (!stop.get() && System.nanoTime() < deadline) {
					Mode mode = current.get();
					try {
						this.transactions.executeWithoutResult((status) -> {
							if (mode.guarded) {
								this.fencing.guard(this.token);
							}
							this.jdbc.update(UPDATE, row);
						});
						mode.committed.increment();
					}
					catch (RuntimeException ex) {
						mode.failures.incrementAndGet();
						mode.firstFailure.compareAndSet(null, ex);
					}
				}
			});
		}
		writers.shutdown();
		try {
			TimeUnit.NANOSECONDS.sleep(WARM_UP.toNanos() / 2);
			current.set(plain);
			TimeUnit.NANOSECONDS.sleep(WARM_UP.toNanos() / 2);
			long turnStart = System.nanoTime();
			for (long turn = 0; turn < 2 * seconds; turn++) {
				Mode mode = (turn % 2 == 0) ? guarded : plain;
				current.set(mode);
				this.heartbeats.samples = mode.renewals;
				long count = mode.committed.sum();
				TimeUnit.NANOSECONDS.sleep(turnStart + TimeUnit.SECONDS.toNanos(1) - System.nanoTime());
				long turnEnd = System.nanoTime();
				mode.count(mode.committed.sum() - count, turnEnd - turnStart);
				turnStart = turnEnd;
			}
		}
		finally {
			this.heartbeats.samples = null;
			stop.set(true);
		}
		if (!writers.awaitTermination(30, TimeUnit.SECONDS)) {
			writers.shutdownNow();
			throw new IllegalStateException("The writers did not stop within 30 s of the window's end");
		}
		return new Comparison(guarded.window(threads), plain.window(threads));
	}

	/**
	 * Returns the revocations of the engine's lease since it was granted, as delivered so
	 * far.
	 * @return the revocations
	 */
	List<LeadershipRevokedEvent> revocations() {
		return List.copyOf(this.revocations);
	}

	/**
	 * Returns how many of the leader's heartbeats failed or did not renew its lease.
	 * @return the count
	 */
	long notRenewed() {
		return this.heartbeats.notRenewed.get();
	}

	/**
	 * Returns the term the writers' token carries, granted before the first window.
	 * @return the term
	 */
	long termBefore() {
		return this.token.term();
	}

	/**
	 * Returns the term this engine leads now, 0 if it leads none.
	 * @return the term
	 */
	long termNow() {
		return this.engine.token(GROUP).map(FencingToken::term).orElse(0L);
	}

	private static Stats snapshot(List<Double> samples) {
		synchronized (samples) {
			return Stats.of(new ArrayList<>(samples));
		}
	}

	@Override
	public void close() {
		this.engine.stop();
		this.jdbc.execute("DROP TABLE IF EXISTS bench_guarded");
		this.dataSource.close();
	}

	/**
	 * The two modes of one thread count.
	 *
	 * @param guarded the guarded transactions
	 * @param plain the plain transactions
	 */
	record Comparison(Window guarded, Window plain) {
	}

	/**
	 * The outcome of one mode.
	 *
	 * @param perSecond the commits of each second, per second
	 * @param mean the commits of the window, per second
	 * @param renewals the leader's renewal round trips that started during the mode's
	 * turns, in milliseconds
	 * @param failures the transactions of the mode that failed, warm-up included
	 */
	record Window(Stats perSecond, double mean, Stats renewals, long failures) {
	}

	/**
	 * The transactions of one mode, counted by its turns.
	 */
	private static final class Mode {

		private final boolean guarded;

		private final LongAdder committed = new LongAdder();

		private final AtomicLong failures = new AtomicLong();

		private final AtomicReference<@Nullable RuntimeException> firstFailure = new AtomicReference<>();

		private final List<Double> rates = new ArrayList<>();

		private final List<Double> renewals = Collections.synchronizedList(new ArrayList<>());

		private long counted;

		private long nanos;

		Mode(boolean guarded) {
			this.guarded = guarded;
		}

		void count(long commits, long elapsed) {
			this.rates.add(commits * 1e9 / elapsed);
			this.counted += commits;
			this.nanos += elapsed;
		}

		Window window(int threads) {
			RuntimeException failure = this.firstFailure.get();
			if (failure != null) {
				System.out.println("NOTE first failed " + (this.guarded ? "guarded" : "plain") + " write, " + threads
						+ " threads: " + failure);
			}
			return new Window(Stats.of(this.rates), this.counted * 1e9 / this.nanos, snapshot(this.renewals),
					this.failures.get());
		}

	}

	/**
	 * Times the leader's heartbeats from the observation's start to its stop, which
	 * enclose the round trip alone, and counts those that did not renew.
	 */
	private static final class HeartbeatTimer implements ObservationHandler<Observation.Context> {

		private static final String STARTED = "bench.started";

		private static final String SAMPLES = "bench.samples";

		private final AtomicLong notRenewed = new AtomicLong();

		/**
		 * Where the renewals that start now go; none between windows.
		 */
		private volatile @Nullable List<Double> samples;

		@Override
		public boolean supportsContext(Observation.Context context) {
			return true;
		}

		@Override
		public void onStart(Observation.Context context) {
			context.put(STARTED, System.nanoTime());
			List<Double> samples = this.samples;
			if (samples != null) {
				context.put(SAMPLES, samples);
			}
		}

		@Override
		public void onStop(Observation.Context context) {
			long stopped = System.nanoTime();
			Long started = context.get(STARTED);
			KeyValue role = context.getLowCardinalityKeyValue(LeaseObservations.HeartbeatKeyNames.ROLE.asString());
			if (started == null || !LeaseObservations.HEARTBEAT.getName().equals(context.getName()) || role == null
					|| !"leader".equals(role.getValue())) {
				return;
			}
			KeyValue outcome = context
				.getLowCardinalityKeyValue(LeaseObservations.HeartbeatKeyNames.OUTCOME.asString());
			if (outcome == null || !"success".equals(outcome.getValue())) {
				this.notRenewed.incrementAndGet();
			}
			List<Double> samples = context.get(SAMPLES);
			if (samples != null) {
				samples.add((stopped - started) / 1e6);
			}
		}

	}

}
