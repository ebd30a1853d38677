package dev.leader.benchmarks;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import dev.leader.lease.LeaseSettings;
import dev.leader.test.EtcdCluster;
import dev.leader.test.TestNode;

/**
 * The figures of {@code --only=etcd}: the same figures on PostgreSQL and on an etcd
 * cluster of three members, in the same run, each pair one after the other, with the
 * ratio etcd / PostgreSQL. The cluster is the test kit's {@link EtcdCluster}: the
 * machine's etcd binary on loopback ports, with a temporary data directory that is
 * removed at the end.
 * <ol>
 * <li>Graceful hand-over of three bare-engine nodes with the default settings: SIGTERM to
 * the leader → the successor's grant ({@code TestNode}s, on etcd with {@code --etcd},
 * their database pool idle).</li>
 * <li>Crash: {@code kill -9} of the leader → the successor's grant, with the failover's
 * fast settings (lease 2 s): on PostgreSQL with crash takeover (the lease bound to the
 * holder's session) and by lease expiry, on etcd by the etcd lease's expiry, which etcd
 * counts in whole seconds.</li>
 * <li>Idle load of three nodes × one group with the default settings: on PostgreSQL the
 * transactions the server counts and the statements the engines sent, per second; on etcd
 * the gRPC messages the members received from clients, and the calls started, per second
 * ({@link EtcdMetrics}).</li>
 * <li>Decision log ({@link LogBenchmark}): append → applied, append, sustained appends,
 * their lag, read-index and bounded reads at a follower.</li>
 * </ol>
 */
final class EtcdBenchmarks {

	private static final String GROUP = "bench";

	private static final Duration TIMEOUT = Duration.ofSeconds(30);

	private EtcdBenchmarks() {
	}

	static void run(BenchDatabase database, Path logs, BenchOptions options, int rounds, Duration quietWait)
			throws Exception {
		try (EtcdCluster etcd = EtcdCluster.start(3)) {
			System.out.println("NOTE etcd: 3 members on " + String.join(",", etcd.endpoints()));
			handOver(database, etcd, logs, rounds, quietWait);
			crash(database, etcd, logs, rounds);
			idle(database, etcd, logs, options);
			log(database, etcd, options);
		}
	}

	private static void handOver(BenchDatabase database, EtcdCluster etcd, Path logs, int rounds, Duration quietWait)
			throws Exception {
		Report.awaitQuietMachine(0.5, quietWait);
		String load = Report.loadAverage();
		List<List<Double>> postgres = new LeadershipTimings(database, logs, "pg-handover-", List.of())
			.handOver(LeaseSettings.defaults(), rounds, Duration.ofSeconds(4));
		List<List<Double>> onEtcd = LeadershipTimings.onEtcd(database, etcd.endpoints(), logs, "etcd-handover-")
			.handOver(LeaseSettings.defaults(), rounds, Duration.ofSeconds(4));
		pair("graceful hand-over, SIGTERM -> successor's grant (3 bare-engine nodes, defaults)", postgres.get(0),
				onEtcd.get(0), load);
		pair("  SIGTERM -> leader's revoke delivered", postgres.get(1), onEtcd.get(1), load);
		pair("  leader's revoke -> successor's grant", postgres.get(2), onEtcd.get(2), load);
	}

	private static void crash(BenchDatabase database, EtcdCluster etcd, Path logs, int rounds) throws Exception {
		String load = Report.loadAverage();
		List<Double> takeover = new LeadershipTimings(database, logs, "pg-takeover-",
				List.of("--crash-takeover=" + GROUP))
			.killToGrant(Benchmarks.FAILOVER, rounds, Duration.ofSeconds(1));
		List<Double> expiry = new LeadershipTimings(database, logs)
			.failover(Benchmarks.FAILOVER, rounds, Duration.ofSeconds(1))
			.get(0);
		List<Double> onEtcd = LeadershipTimings.onEtcd(database, etcd.endpoints(), logs, "etcd-crash-")
			.killToGrant(Benchmarks.FAILOVER, rounds, Duration.ofSeconds(1));
		String what = "crash, kill -9 -> successor's grant (3 nodes, lease 2 s, renew 500 ms)";
		Report.result(what + ", PostgreSQL crash takeover", Stats.of(takeover).format("ms"), load);
		Report.result(what + ", PostgreSQL lease expiry", Stats.of(expiry).format("ms"), load);
		Report.result(what + ", etcd lease expiry", Stats.of(onEtcd).format("ms"), load);
		ratio("  etcd / PostgreSQL crash takeover, medians", Stats.of(onEtcd).median(), Stats.of(takeover).median(),
				load);
		ratio("  etcd / PostgreSQL lease expiry, medians", Stats.of(onEtcd).median(), Stats.of(expiry).median(), load);
	}

	private static void idle(BenchDatabase database, EtcdCluster etcd, Path logs, BenchOptions options)
			throws Exception {
		Duration window = options.duration("load-window", Duration.ofSeconds(10));
		int windows = options.integer("load-windows", 6);
		String load = Report.loadAverage();
		IdleLoad.Result postgres = new IdleLoad(database, logs).measure(3, 1, List.of(), Duration.ofSeconds(10), window,
				windows);
		EtcdLoad onEtcd = etcdIdle(database, etcd, logs, Duration.ofSeconds(10), window, windows);
		Report.result(
				String.format(Locale.ROOT, "idle load, 3 nodes x 1 group (defaults), PostgreSQL, per %d s window",
						window.toSeconds()),
				postgres.load().format()
						+ String.format(Locale.ROOT, "; engines sent %.2f statements/s", postgres.statements()),
				load);
		Report.result(
				String.format(Locale.ROOT, "idle load, 3 nodes x 1 group (defaults), etcd, per %d s window",
						window.toSeconds()),
				onEtcd.perWindow().format("requests/s") + String.format(Locale.ROOT,
						"; mean %.2f requests/s (gRPC messages received); %.2f calls " + "started/s", onEtcd.received(),
						onEtcd.started()),
				load);
		Report.result("  etcd requests/s by gRPC method",
				onEtcd.byMethod()
					.entrySet()
					.stream()
					.map((entry) -> String.format(Locale.ROOT, "%s %.2f", entry.getKey(), entry.getValue()))
					.collect(Collectors.joining(", ")),
				load);
		ratio("  etcd requests/s / PostgreSQL statements/s the engines sent", onEtcd.received(), postgres.statements(),
				load);
		ratio("  etcd requests/s / PostgreSQL transactions/s", onEtcd.received(), postgres.load().mean(), load);
	}

	private static EtcdLoad etcdIdle(BenchDatabase database, EtcdCluster etcd, Path logs, Duration warmUp,
			Duration window, int windows) throws Exception {
		BenchNodes nodes = new BenchNodes(logs, "etcd-idle-");
		List<String> arguments = new ArrayList<>(LeadershipTimings.nodeArguments(database, LeaseSettings.defaults()));
		arguments.addAll(LeadershipTimings.etcdArguments(etcd.endpoints(), "leader-bench/idle-" + System.nanoTime()));
		arguments.add("--groups=" + GROUP);
		try {
			nodes.startAll(3, (nodeId, log) -> TestNode.start(nodeId, arguments, log), TIMEOUT);
			long deadline = System.nanoTime() + TIMEOUT.toNanos();
			while (nodes.all().stream().filter((node) -> node.isLeader(GROUP)).count() != 1) {
				if (System.nanoTime() > deadline) {
					throw new IllegalStateException("No single leader of " + GROUP + " on etcd within " + TIMEOUT);
				}
				TimeUnit.MILLISECONDS.sleep(50);
			}
			TimeUnit.NANOSECONDS.sleep(warmUp.toNanos());
			EtcdMetrics metrics = new EtcdMetrics(etcd.endpoints());
			EtcdMetrics.Counters start = metrics.read();
			EtcdMetrics.Counters previous = start;
			long began = System.nanoTime();
			List<Double> rates = new ArrayList<>();
			for (int i = 0; i < windows; i++) {
				long windowStart = System.nanoTime();
				TimeUnit.NANOSECONDS.sleep(window.toNanos());
				EtcdMetrics.Counters now = metrics.read();
				rates.add((now.totalReceived() - previous.totalReceived()) / ((System.nanoTime() - windowStart) / 1e9));
				previous = now;
			}
			double seconds = (System.nanoTime() - began) / 1e9;
			Map<String, Double> byMethod = new TreeMap<>();
			EtcdMetrics.Counters end = previous;
			end.received().forEach((method, count) -> {
				double rate = (count - start.received().getOrDefault(method, 0.0)) / seconds;
				if (rate > 0) {
					byMethod.put(method, rate);
				}
			});
			return new EtcdLoad(Stats.of(rates), (end.totalReceived() - start.totalReceived()) / seconds,
					(end.started() - start.started()) / seconds, byMethod);
		}
		finally {
			nodes.closeAll();
		}
	}

	private static void log(BenchDatabase database, EtcdCluster etcd, BenchOptions options) throws Exception {
		Report.awaitQuietMachine(0.5, Duration.ofMinutes(1));
		String load = Report.loadAverage();
		Map<String, Double> postgres = LogBenchmark.run(LogBenchmark.postgres(database), " on PostgreSQL", options);
		Map<String, Double> onEtcd = LogBenchmark.run(LogBenchmark.etcd(etcd.endpoints()), " on etcd", options);
		for (Map.Entry<String, Double> figure : postgres.entrySet()) {
			ratio("decision log, etcd / PostgreSQL: " + figure.getKey()
					+ (figure.getKey().equals(LogBenchmark.RATE) ? " (means)" : " (medians)"),
					onEtcd.getOrDefault(figure.getKey(), Double.NaN), figure.getValue(), load);
		}
	}

	private static void pair(String what, List<Double> postgres, List<Double> onEtcd, String load) {
		Report.result(what + ", PostgreSQL", Stats.of(postgres).format("ms"), load);
		Report.result(what + ", etcd", Stats.of(onEtcd).format("ms"), load);
		ratio("  etcd / PostgreSQL, medians", Stats.of(onEtcd).median(), Stats.of(postgres).median(), load);
	}

	private static void ratio(String what, double etcd, double postgres, String load) {
		Report.result(what,
				String.format(Locale.ROOT, "%.2fx (etcd %.2f, PostgreSQL %.2f)", etcd / postgres, etcd, postgres),
				load);
	}

	/**
	 * The idle load an etcd cluster counted.
	 *
	 * @param perWindow messages received per second, per window
	 * @param received messages received per second over all windows
	 * @param started calls started per second over all windows
	 * @param byMethod messages received per second over all windows, by gRPC method
	 */
	private record EtcdLoad(Stats perWindow, double received, double started, Map<String, Double> byMethod) {
	}

}
