package dev.leader.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.FencingToken;
import dev.leader.etcd.EtcdCoordinationStore;
import dev.leader.etcd.EtcdLogStore;
import dev.leader.lease.CoordinationStore;
import dev.leader.log.Bookmark;
import dev.leader.log.DecisionLog;
import dev.leader.log.LogApplier;
import dev.leader.log.LogEntry;
import dev.leader.log.LogMonitor;
import dev.leader.log.LogMonitor.ReadOutcome;
import dev.leader.log.LogStore;
import dev.leader.node.NodeRegistration;
import dev.leader.postgres.PostgresCoordinationStore;
import dev.leader.postgres.PostgresLogStore;
import io.etcd.jetcd.Client;
import org.jspecify.annotations.Nullable;

/**
 * The decision log's figures ({@code --only=log}): a leader and two followers in this
 * JVM, each with a pool, a {@code LISTEN} connection and a {@link DecisionLog} of its
 * own, on the benchmark's database, so that one monotonic clock times an entry from the
 * leader's append to its apply on each follower. The followers learn of appends from the
 * notifications alone (no engine heartbeats here), as they do between heartbeats.
 * <ol>
 * <li>Append → applied on every follower: {@code --log-rounds} appends one at a time, 2
 * ms apart, each timed from before the append to the later of the two followers'
 * applies.</li>
 * <li>Sustained appends: {@code --log-rate} appends a second (default 1,000) from
 * {@code --log-threads} threads (4) for {@code --log-window} (PT10S), each entry's lag
 * being the time from its append's return to its apply on a follower. Meanwhile a reader
 * on a follower makes a bounded read ({@code awaitStaleness}, bound {@code --log-bound},
 * PT0.1S) every millisecond and another a read-index read every 5 ms; their durations are
 * reported by outcome.</li>
 * <li>Reads on an idle log: read-index reads, then bounded reads (bound 10 s) right after
 * one, each served locally.</li>
 * </ol>
 */
final class LogBenchmark {

	private static final String GROUP = "log-bench";

	private static final Duration WAIT = Duration.ofSeconds(10);

	/**
	 * The name of the median of append → applied on both followers, one at a time.
	 */
	static final String APPLIED = "append -> applied on both followers";

	/**
	 * The name of the median of an append alone.
	 */
	static final String APPEND = "the append alone";

	/**
	 * The name of the mean rate of the sustained appends, per second.
	 */
	static final String RATE = "sustained appends per second";

	/**
	 * The name of the median lag of the sustained appends on a follower.
	 */
	static final String LAG = "lag of a sustained append on a follower";

	/**
	 * The name of the median read-index read on a follower, idle log.
	 */
	static final String READ_INDEX = "read-index read on a follower, idle log";

	/**
	 * The name of the median bounded read on a follower, idle log, in microseconds.
	 */
	static final String BOUNDED = "bounded read on a follower, idle log (us)";

	private final NodeStores stores;

	private final String label;

	private final List<Node> nodes = new ArrayList<>();

	private final Map<String, Double> medians = new LinkedHashMap<>();

	private LogBenchmark(NodeStores stores, String label) {
		this.stores = stores;
		this.label = label;
	}

	static void run(BenchDatabase database, BenchOptions options) throws Exception {
		run(postgres(database), "", options);
	}

	/**
	 * Runs the decision log's figures on the given stores.
	 * @param stores makes each node's stores
	 * @param label printed after {@code decision log} in each figure's name, such as
	 * {@code " on etcd"}
	 * @param options the options
	 * @return the main figures by name, named by the constants of this class: medians of
	 * the times, the mean rate of the sustained appends
	 */
	static Map<String, Double> run(NodeStores stores, String label, BenchOptions options) throws Exception {
		LogBenchmark benchmark = new LogBenchmark(stores, label);
		try {
			benchmark.measure(options);
			return benchmark.medians;
		}
		finally {
			benchmark.close();
		}
	}

	/**
	 * The stores of the nodes on the benchmark's PostgreSQL database: a pool, a listening
	 * coordination store and a log store each.
	 * @param database the database
	 * @return the stores
	 */
	static NodeStores postgres(BenchDatabase database) {
		return (id, poolSize) -> {
			HikariDataSource dataSource = database.dataSource(id, poolSize);
			PostgresCoordinationStore listener = new PostgresCoordinationStore(dataSource, BenchDatabase.PREFIX,
					Duration.ofSeconds(3));
			PostgresLogStore store = new PostgresLogStore(dataSource, BenchDatabase.PREFIX, Duration.ofSeconds(3),
					Duration.ofSeconds(10), listener);
			return new Stores(listener, store, dataSource::close);
		};
	}

	/**
	 * The stores of the nodes on an etcd cluster: an etcd client, a coordination store
	 * and a log store each, on one key prefix of the run's own.
	 * @param endpoints the client URLs of the members
	 * @return the stores
	 */
	static NodeStores etcd(List<String> endpoints) {
		String prefix = "leader-bench/log-" + System.nanoTime();
		return (id, poolSize) -> {
			Client client = Client.builder().endpoints(endpoints.toArray(String[]::new)).build();
			return new Stores(new EtcdCoordinationStore(client, prefix, Duration.ofSeconds(3)),
					new EtcdLogStore(client, prefix, Duration.ofSeconds(3)), client::close);
		};
	}

	private void measure(BenchOptions options) throws Exception {
		int rounds = options.integer("log-rounds", 1000);
		int rate = options.integer("log-rate", 1000);
		int threads = options.integer("log-threads", 4);
		Duration window = options.duration("log-window", Duration.ofSeconds(10));
		Duration bound = options.duration("log-bound", Duration.ofMillis(100));
		Node leader = node("log-leader", threads + 2);
		Node first = node("log-follower-1", 4);
		Node second = node("log-follower-2", 4);
		NodeRegistration registration = new NodeRegistration(leader.id, leader.id, "localhost",
				ProcessHandle.current().pid());
		leader.listener.tick(registration, Map.of(), List.of(), Duration.ofMinutes(30), Duration.ofMinutes(30));
		long term = leader.listener.acquire(GROUP, registration, Duration.ofMinutes(30)).lease().term();
		FencingToken token = new FencingToken(GROUP, term);
		List<Node> followers = List.of(first, second);
		// Warm-up: connections, JIT, the tails' first reads.
		for (int i = 0; i < 300; i++) {
			Bookmark entry = leader.log.append(token, "warm-up", "w" + i);
			for (Node follower : followers) {
				follower.log.awaitApplied(entry, WAIT);
			}
		}

		String load = Report.loadAverage();
		List<Double> toEvery = new ArrayList<>();
		List<Double> appendOnly = new ArrayList<>();
		for (int i = 0; i < rounds; i++) {
			long start = System.nanoTime();
			Bookmark entry = leader.log.append(token, "round", "r" + i);
			appendOnly.add(millis(System.nanoTime() - start));
			long last = 0;
			for (Node follower : followers) {
				if (!follower.log.awaitApplied(entry, WAIT)) {
					throw new IllegalStateException(follower.id + " did not apply " + entry + " within " + WAIT);
				}
				last = Math.max(last, follower.applier.appliedAt(entry.index()));
			}
			toEvery.add(millis(last - start));
			LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2));
		}
		result(APPLIED,
				"decision log" + this.label
						+ ": append -> applied on both followers (3 nodes in one JVM, one at a time)",
				Stats.of(toEvery), "ms", load);
		result(APPEND, "  the append alone (PostgreSQL: one durable autocommitted statement; etcd: one transaction)",
				Stats.of(appendOnly), "ms", load);

		load = Report.loadAverage();
		Sustained sustained = sustain(leader, first, followers, token, rate, threads, window, bound);
		Report.result(
				String.format(Locale.ROOT, "decision log%s: sustained appends, target %d/s from %d threads for %d s",
						this.label, rate, threads, window.toSeconds()),
				String.format(Locale.ROOT, "%.0f appends/s (n=%d); followers caught up %.1f ms after the last",
						sustained.appends() / sustained.seconds(), sustained.appends(), sustained.caughtUpMillis()),
				load);
		this.medians.put(RATE, sustained.appends() / sustained.seconds());
		result(LAG, "  lag of each entry on each follower: append returned -> applied", Stats.of(sustained.lags()),
				"ms", load);
		Report.result("  bounded read on a follower under load (awaitStaleness " + bound.toMillis() + " ms), local",
				Stats.of(sustained.boundedLocal()).format("us"), load);
		Report.result("  the same, served after a read index (waited)",
				Stats.of(sustained.boundedWaited()).format("us") + "; rejected " + sustained.boundedRejected(), load);
		Report.result("  read-index read on a follower under load (awaitReadIndex)",
				Stats.of(sustained.readIndex()).format("ms") + "; rejected " + sustained.readIndexRejected(), load);

		load = Report.loadAverage();
		List<Double> readIndex = new ArrayList<>();
		for (int i = 0; i < 2000; i++) {
			long start = System.nanoTime();
			if (!first.log.awaitReadIndex(GROUP, WAIT)) {
				throw new IllegalStateException("A read index on an idle log timed out");
			}
			readIndex.add(millis(System.nanoTime() - start));
		}
		result(READ_INDEX, "decision log" + this.label + ": read-index read on a follower, idle log (applied already)",
				Stats.of(readIndex), "ms", load);
		load = Report.loadAverage();
		List<Double> bounded = new ArrayList<>();
		first.log.awaitReadIndex(GROUP, WAIT);
		int local = 0;
		for (int i = 0; i < 20_000; i++) {
			long start = System.nanoTime();
			if (!first.log.awaitStaleness(GROUP, Duration.ofSeconds(10), WAIT)) {
				throw new IllegalStateException("A bounded read of 10 s on an idle log failed");
			}
			bounded.add(micros(System.nanoTime() - start));
			local += (first.monitor.last.get() == ReadOutcome.LOCAL) ? 1 : 0;
		}
		Report.result("decision log" + this.label + ": bounded read on a follower, idle log, bound 10 s",
				Stats.of(bounded).format("us") + "; served locally " + local, load);
		this.medians.put(BOUNDED, Stats.of(bounded).median());
	}

	private Sustained sustain(Node leader, Node reader, List<Node> followers, FencingToken token, int rate, int threads,
			Duration window, Duration bound) throws Exception {
		Map<Long, Long> returnedAt = new ConcurrentHashMap<>();
		AtomicBoolean running = new AtomicBoolean(true);
		List<Double> boundedLocal = new CopyOnWriteArrayList<>();
		List<Double> boundedWaited = new CopyOnWriteArrayList<>();
		List<Double> readIndex = new CopyOnWriteArrayList<>();
		long[] rejected = new long[2];
		List<Thread> workers = new ArrayList<>();
		long periodNanos = TimeUnit.SECONDS.toNanos(threads) / rate;
		long start = System.nanoTime();
		long end = start + window.toNanos();
		for (int t = 0; t < threads; t++) {
			long offset = periodNanos * t / threads;
			workers.add(thread("log-bench-append-" + t, () -> {
				long next = start + offset;
				int i = 0;
				while (next < end) {
					long wait = next - System.nanoTime();
					if (wait > 0) {
						LockSupport.parkNanos(wait);
					}
					Bookmark entry = leader.log.append(token, "load", "l" + i++);
					returnedAt.put(entry.index(), System.nanoTime());
					next += periodNanos;
				}
			}));
		}
		workers.add(thread("log-bench-bounded", () -> {
			while (running.get()) {
				long began = System.nanoTime();
				boolean served = reader.log.awaitStaleness(GROUP, bound, WAIT);
				double took = micros(System.nanoTime() - began);
				ReadOutcome outcome = reader.monitor.last.get();
				if (!served) {
					synchronized (rejected) {
						rejected[0]++;
					}
				}
				else {
					((outcome == ReadOutcome.LOCAL) ? boundedLocal : boundedWaited).add(took);
				}
				LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
			}
		}));
		workers.add(thread("log-bench-read-index", () -> {
			while (running.get()) {
				long began = System.nanoTime();
				if (reader.log.awaitReadIndex(GROUP, WAIT)) {
					readIndex.add(millis(System.nanoTime() - began));
				}
				else {
					synchronized (rejected) {
						rejected[1]++;
					}
				}
				LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
			}
		}));
		for (int t = 0; t < threads; t++) {
			workers.get(t).join(window.toMillis() + WAIT.toMillis() * 3);
		}
		double seconds = (System.nanoTime() - start) / 1e9;
		running.set(false);
		for (Thread worker : workers) {
			worker.join(WAIT.toMillis());
		}
		long last = returnedAt.keySet().stream().mapToLong(Long::longValue).max().orElseThrow();
		long lastReturned = returnedAt.get(last);
		long caughtUp = lastReturned;
		for (Node follower : followers) {
			if (!follower.log.awaitApplied(new Bookmark(GROUP, token.term(), last), WAIT)) {
				throw new IllegalStateException(follower.id + " did not catch up within " + WAIT);
			}
			caughtUp = Math.max(caughtUp, follower.applier.appliedAt(last));
		}
		List<Double> lags = new ArrayList<>();
		returnedAt.forEach((index, returned) -> {
			for (Node follower : followers) {
				lags.add(millis(Math.max(0, follower.applier.appliedAt(index) - returned)));
			}
		});
		return new Sustained(returnedAt.size(), seconds, millis(caughtUp - lastReturned), lags, boundedLocal,
				boundedWaited, rejected[0], readIndex, rejected[1]);
	}

	private void result(String figure, String what, Stats stats, String unit, String load) {
		this.medians.put(figure, stats.median());
		Report.result(what, stats.format(unit), load);
	}

	private Node node(String id, int poolSize) throws Exception {
		Stores stores = this.stores.create(id, poolSize);
		CoordinationStore listener = stores.coordination();
		LogStore store = stores.log();
		Stamps applier = new Stamps();
		Outcomes monitor = new Outcomes();
		DecisionLog log = new DecisionLog(store, id, id.equals("log-leader") ? List.of() : List.of(applier));
		log.setMonitor(monitor);
		log.start();
		Node node = new Node(id, stores, listener, log, applier, monitor);
		this.nodes.add(node);
		return node;
	}

	private void close() {
		for (Node node : this.nodes) {
			node.log.stop();
			node.listener.disconnect();
			try {
				node.stores.resources().close();
			}
			catch (Exception ex) {
				// closing anyway
			}
		}
	}

	private static Thread thread(String name, Task task) {
		Thread thread = new Thread(() -> {
			try {
				task.run();
			}
			catch (Exception ex) {
				throw new IllegalStateException(name + " failed", ex);
			}
		}, name);
		thread.setDaemon(true);
		thread.start();
		return thread;
	}

	private static double millis(long nanos) {
		return nanos / 1e6;
	}

	private static double micros(long nanos) {
		return nanos / 1e3;
	}

	/**
	 * Work of a benchmark thread.
	 */
	@FunctionalInterface
	private interface Task {

		void run() throws Exception;

	}

	/**
	 * One node: its pool, its listening store and its log.
	 */
	private record Node(String id, Stores stores, CoordinationStore listener, DecisionLog log, Stamps applier,
			Outcomes monitor) {
	}

	/**
	 * Makes the stores of one node of the benchmark.
	 */
	@FunctionalInterface
	interface NodeStores {

		/**
		 * Makes a node's stores.
		 * @param id the node's id
		 * @param poolSize how many connections its pool has, where it has one
		 * @return the stores
		 */
		Stores create(String id, int poolSize) throws Exception;

	}

	/**
	 * One node's stores, and what closes what they run on.
	 *
	 * @param coordination the coordination store, which also listens
	 * @param log the log store
	 * @param resources closes the pool or the client, after the log stopped
	 */
	record Stores(CoordinationStore coordination, LogStore log, AutoCloseable resources) {
	}

	/**
	 * What the sustained run measured.
	 */
	private record Sustained(int appends, double seconds, double caughtUpMillis, List<Double> lags,
			List<Double> boundedLocal, List<Double> boundedWaited, long boundedRejected, List<Double> readIndex,
			long readIndexRejected) {
	}

	/**
	 * Records when each entry was applied, on {@link System#nanoTime()}.
	 */
	private static final class Stamps implements LogApplier {

		private final Map<Long, Long> appliedAt = new ConcurrentHashMap<>();

		@Override
		public String group() {
			return GROUP;
		}

		@Override
		public void apply(LogEntry entry) {
			this.appliedAt.put(entry.index(), System.nanoTime());
		}

		long appliedAt(long index) {
			Long at = this.appliedAt.get(index);
			if (at == null) {
				throw new IllegalStateException("Entry " + index + " was not applied");
			}
			return at;
		}

	}

	/**
	 * Keeps each reading thread's last read outcome.
	 */
	private static final class Outcomes implements LogMonitor {

		private final ThreadLocal<@Nullable ReadOutcome> last = new ThreadLocal<>();

		@Override
		public void read(String group, ReadOutcome outcome) {
			this.last.set(outcome);
		}

	}

}
