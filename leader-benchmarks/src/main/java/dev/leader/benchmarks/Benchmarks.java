package dev.leader.benchmarks;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import dev.leader.LeadershipRevokedEvent;
import dev.leader.lease.LeaseSettings;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.util.Statistics;

/**
 * Runs the benchmarks and prints every figure as min / median / p99 / max. Started by
 * {@code ./mvnw -Pbenchmarks -pl leader-benchmarks -am -DskipTests verify}; see
 * {@code leader-benchmarks/README.md}.
 * <p>
 * Arguments, all optional:
 * {@code --only=handover,failover,load,daemons,guarded,log,jmh,app-handover,app-failover,app-idle,peer}
 * (on MariaDB {@code load,guarded,app-handover,app-failover,app-idle,peer}, the default
 * there), {@code --rounds=30} (hand-overs, on the bare engine and on the sample app, and
 * failovers), {@code --peer-rounds=10} (the hand-overs and failovers of the sample app
 * and of its peer, Spring Integration's JDBC leader election, see
 * {@link PeerBenchmarks}), {@code --load=3x1,100x1000} (idle clusters, nodes x groups; on
 * MariaDB {@code 3x1}, at most 5 nodes), {@code --load-window=PT10S} and
 * {@code --load-windows=6}, {@code --daemons=3x7} (nodes x daemons) and
 * {@code --daemon-rounds=5} (kills), {@code --guarded-threads=1,4,16} and
 * {@code --guarded-window=PT20S} (writer threads, and how long each count runs guarded
 * and plain), {@code --log-rounds=1000}, {@code --log-rate=1000},
 * {@code --log-threads=4}, {@code --log-window=PT10S} and {@code --log-bound=PT0.1S} (the
 * decision log, see {@link LogBenchmark}), {@code --database=leader_bench} (the database
 * created for the run, dropped first if it exists, and {@code <database>_app} for the
 * sample app's nodes), {@code --app-handover=daemons,no-daemons},
 * {@code --app-idle=default,no-validation}, {@code --app-settle=PT4S} and
 * {@code --quiet-wait=PT3M} (how long to wait at most for a quiet machine before JMH, the
 * hand-overs and the guarded writes; the sample app: see {@link SampleAppTimings}),
 * {@code --server-log=<path>} (the server's log file when {@code pg_current_logfile()}
 * does not name it). Not in the default list: {@code etcd} and {@code etcd-app}, the
 * figures of the bare engine and of the sample app on an etcd cluster that the run
 * starts, beside PostgreSQL's ({@link EtcdBenchmarks}, {@link EtcdAppBenchmarks}). The
 * server comes from {@code LEADER_BENCH_JDBC_URL} (default
 * {@code jdbc:postgresql://127.0.0.1:5432/postgres}; or {@code jdbc:mariadb://…}),
 * {@code LEADER_BENCH_JDBC_USER} ({@code postgres}, on MariaDB {@code root}) and
 * {@code LEADER_BENCH_JDBC_PASSWORD}; the user must be allowed to create databases (on
 * MariaDB also users, and to set {@code userstat}), and on PostgreSQL to read the server
 * log ({@code pg_read_server_files}) for the error-line count.
 */
public final class Benchmarks {

	/**
	 * Fast timings for the failover rounds: the lag after expiry does not depend on the
	 * lease duration, and a two-second lease keeps a round short.
	 */
	static final LeaseSettings FAILOVER = new LeaseSettings(Duration.ofSeconds(2), Duration.ofMillis(500),
			Duration.ofMillis(500), Duration.ofMillis(300), Duration.ofSeconds(2), Duration.ofSeconds(3));

	/**
	 * The benchmarks that run on MariaDB: the others start {@code TestNode} and
	 * {@code DaemonTestNode}, or build the stores of the decision log, which are
	 * PostgreSQL's.
	 */
	private static final String MARIADB_BENCHMARKS = "load,guarded,app-handover,app-failover,app-idle,peer";

	private Benchmarks() {
	}

	public static void main(String[] args) throws Exception {
		BenchOptions options = BenchOptions.parse(args);
		String url = env("LEADER_BENCH_JDBC_URL", "jdbc:postgresql://127.0.0.1:5432/postgres");
		Dialect dialect = Dialect.of(url);
		boolean postgres = dialect == Dialect.POSTGRESQL;
		List<String> only = options.list("only",
				postgres ? "handover,failover,load,daemons,guarded,log,jmh,app-handover,app-failover,app-idle,peer"
						: MARIADB_BENCHMARKS);
		if (!postgres && !List.of(MARIADB_BENCHMARKS.split(",")).containsAll(only)) {
			throw new IllegalArgumentException("On MariaDB --only takes " + MARIADB_BENCHMARKS + " (the others run "
					+ "nodes and stores of PostgreSQL), was " + String.join(",", only));
		}
		int rounds = options.integer("rounds", 30);
		Duration quietWait = options.duration("quiet-wait", Duration.ofMinutes(3));
		String user = env("LEADER_BENCH_JDBC_USER", dialect.defaultUser());
		String password = env("LEADER_BENCH_JDBC_PASSWORD", "");
		Path logs = Files.createDirectories(Path.of("target", "benchmark-logs"));
		System.out.println(Report.machine(url, user, password));
		String name = options.get("database", "leader_bench");
		if (!name.matches("[a-z][a-z0-9_]{0,62}")) {
			throw new IllegalArgumentException("--database must be lower-case letters, digits and _, was " + name);
		}
		double engineHandOver = Double.NaN;
		try (BenchDatabase database = BenchDatabase.create(url, user, password, name, options.get("server-log"))) {
			LeadershipTimings timings = new LeadershipTimings(database, logs);
			if (only.contains("jmh")) {
				// JMH runs first, on a quiet machine, and the guarded writes before the
				// plain ones: after the build or the cluster benchmarks the machine stays
				// slower for minutes (the CPU-only leader check too), and whatever is
				// left for the server to write would slow down the guarded writes and not
				// the plain ones.
				Report.awaitQuietMachine(0.5, quietWait);
				database.settle();
				runJmh(database);
			}
			if (only.contains("handover")) {
				Report.awaitQuietMachine(0.5, quietWait);
				String load = Report.loadAverage();
				// Each round starts after more than a renew interval, so that every
				// follower has made a round trip since it started, as in a cluster that
				// has run for a while.
				List<List<Double>> handOvers = timings.handOver(LeaseSettings.defaults(), rounds,
						Duration.ofSeconds(4));
				engineHandOver = Stats.of(handOvers.get(0)).median();
				Report.results(List.of("graceful hand-over, SIGTERM -> successor's grant (3 nodes, defaults)",
						"  SIGTERM -> leader's revoke delivered (shutdown hook, stop, revoked event)",
						"  leader's revoke -> successor's grant (release, NOTIFY, LISTEN, acquire, granted event)",
						"  reference: the harness's SELECT 1 after idling, 1 s before each signal"), handOvers, load);
			}
			if (only.contains("failover")) {
				String load = Report.loadAverage();
				List<List<Double>> failovers = timings.failover(FAILOVER, rounds, Duration.ofSeconds(1));
				Report
					.results(List.of("crash failover, kill -9 -> successor's grant (3 nodes, lease 2 s, renew 500 ms)",
							"  grant after the lease's database expiry, database clock (takeover's acquired_at)",
							"  grant after the lease's database expiry, successor's grant event"), failovers, load);
			}
			if (only.contains("load")) {
				runIdleLoad(database, logs, options);
			}
			if (only.contains("daemons")) {
				runDaemons(database, logs, options);
			}
			if (only.contains("log")) {
				Report.awaitQuietMachine(0.5, Duration.ofMinutes(1));
				LogBenchmark.run(database, options);
			}
			if (only.contains("etcd")) {
				// Not in the default list: it starts an etcd cluster of its own and runs
				// the PostgreSQL figures it compares again, beside it.
				EtcdBenchmarks.run(database, logs, options, rounds, quietWait);
			}
			if (only.contains("guarded")) {
				// Last, as it loads the machine for minutes; on a quiet machine and a
				// checkpointed database, as the JMH writes.
				Report.awaitQuietMachine(0.5, quietWait);
				database.settle();
				runGuardedLoad(database, options);
			}
		}
		if (only.contains("app-handover") || only.contains("app-failover") || only.contains("app-idle")
				|| only.contains("etcd-app") || only.contains("peer")) {
			// A database of its own, empty: the sample's nodes migrate it themselves, its
			// tables and the starter's.
			try (BenchDatabase database = BenchDatabase.createEmpty(url, user, password, name + "_app",
					options.get("server-log"))) {
				SampleAppTimings app = new SampleAppTimings(database, logs, SampleAppNode.sampleAppJar());
				if (only.contains("app-handover")) {
					SampleAppBenchmarks.handOver(app, options, rounds, engineHandOver);
				}
				if (only.contains("app-failover")) {
					SampleAppBenchmarks.failover(app, options, rounds, FAILOVER);
				}
				if (only.contains("app-idle")) {
					SampleAppBenchmarks.idle(app, options);
				}
				if (only.contains("etcd-app")) {
					// Not in the default list, as etcd: starts an etcd cluster of its
					// own.
					EtcdAppBenchmarks.run(database, logs, SampleAppNode.sampleAppJar(), options, rounds);
				}
				if (only.contains("peer")) {
					// The sample app beside Spring Integration's JDBC leader election, in
					// the
					// same database; the sample's nodes run first, and migrate it.
					PeerBenchmarks.run(app, new PeerTimings(database, logs), database, options);
				}
			}
		}
	}

	private static void runIdleLoad(BenchDatabase database, Path logs, BenchOptions options) throws Exception {
		IdleLoad idle = new IdleLoad(database, logs);
		Duration window = options.duration("load-window", Duration.ofSeconds(10));
		int windows = options.integer("load-windows", 6);
		boolean postgres = database.dialect() == Dialect.POSTGRESQL;
		for (String cluster : options.list("load", postgres ? "3x1,100x1000" : "3x1")) {
			// "3x1" runs the nodes with Hikari's defaults; "3x1v" with pool validation
			// skipped for a minute of idleness, which separates the engine's statements
			// from the pool's validation queries.
			boolean skipValidation = cluster.endsWith("v");
			String[] size = cluster.replace("v", "").split("x");
			if (!postgres && Integer.parseInt(size[0]) > 5) {
				// Beyond 5 nodes the engines of a JVM share one store, and so on MariaDB
				// one wake-up connection: not what separate nodes do.
				throw new IllegalArgumentException("On MariaDB --load takes at most 5 nodes, was " + cluster);
			}
			List<String> jvmOptions = skipValidation ? List.of("-Dcom.zaxxer.hikari.aliveBypassWindowMs=60000")
					: List.of();
			String load = Report.loadAverage();
			IdleLoad.Result result = idle.measure(Integer.parseInt(size[0]), Integer.parseInt(size[1]), jvmOptions,
					Duration.ofSeconds(10), window, windows);
			Report.result(String.format(Locale.ROOT, "idle load, %d nodes x %d groups (defaults%s), per %d s window",
					result.nodes(), result.groups(), skipValidation ? ", no pool validation" : "", window.toSeconds()),
					result.load().format()
							+ String.format(Locale.ROOT, "; engines sent %.2f statements/s", result.statements()),
					load);
		}
	}

	private static void runDaemons(BenchDatabase database, Path logs, BenchOptions options) throws Exception {
		DaemonTimings daemons = new DaemonTimings(database, logs);
		Duration window = options.duration("load-window", Duration.ofSeconds(10));
		int windows = options.integer("load-windows", 6);
		int kills = options.integer("daemon-rounds", 5);
		for (String cluster : options.list("daemons", "3x7")) {
			String[] size = cluster.split("x");
			String load = Report.loadAverage();
			DaemonTimings.Result result = daemons.measure(Integer.parseInt(size[0]), Integer.parseInt(size[1]),
					Duration.ofSeconds(10), window, windows, kills);
			Report.result(String.format(Locale.ROOT,
					"idle load, %d nodes x 1 group x %d daemons (defaults), tx/s per %d s window", result.nodes(),
					result.daemons(), window.toSeconds()), result.load().format(), load);
			Report.result("daemon reassignment, kill -9 of a non-leader -> each of its daemons' first fenced write "
					+ "elsewhere (database clock)", result.perDaemon().format("ms"), load);
			Report.result("  the same, per killed node: until the last of its daemons runs elsewhere",
					result.perNode().format("ms"), load);
		}
	}

	private static void runJmh(BenchDatabase database) throws Exception {
		String load = Report.loadAverage();
		Options check = jmh(LeaderCheckBenchmark.class, 3, 1, 1).build();
		for (RunResult result : new Runner(check).run()) {
			Result<?> primary = result.getPrimaryResult();
			Statistics statistics = primary.getStatistics();
			Report.result("leader check, Leadership.isLeader (JMH average per iteration)",
					String.format(Locale.ROOT, "min %.1f / median %.1f / p99 %.1f / max %.1f ns (n=%d iterations)",
							statistics.getMin(), statistics.getPercentile(50), statistics.getPercentile(99),
							statistics.getMax(), statistics.getN()),
					load);
		}
		load = Report.loadAverage();
		Options writes = jmh(FencedWriteBenchmark.class, 2, 2, 3)
			.jvmArgsAppend("-Dbench.url=" + database.url(), "-Dbench.user=" + database.user(),
					"-Dbench.password=" + database.password())
			.build();
		Collection<RunResult> results = new Runner(writes).run();
		Map<String, Double> medians = new LinkedHashMap<>();
		for (RunResult result : results) {
			String name = result.getParams().getBenchmark().replaceAll(".*\\.", "");
			Statistics statistics = result.getPrimaryResult().getStatistics();
			medians.put(name, statistics.getPercentile(50));
			Report.result("single-row write in a transaction, " + name + " (JMH sample time)",
					String.format(Locale.ROOT, "min %.0f / median %.0f / p99 %.0f / max %.0f us (n=%d)",
							statistics.getMin(), statistics.getPercentile(50), statistics.getPercentile(99),
							statistics.getMax(), statistics.getN()),
					load);
		}
		if (medians.containsKey("guardedWrite") && medians.containsKey("plainWrite")) {
			Report.result("guarded / plain write, medians",
					String.format(Locale.ROOT, "%.2fx", medians.get("guardedWrite") / medians.get("plainWrite")), load);
		}
	}

	/**
	 * Options of a JMH run in one fork, with five measurement iterations.
	 * @param benchmark the benchmark class
	 * @param warmups how many warm-up iterations
	 * @param warmupSeconds how long each warm-up iteration runs
	 * @param measurementSeconds how long each measurement iteration runs
	 * @return the options, to be completed and built
	 */
	private static ChainedOptionsBuilder jmh(Class<?> benchmark, int warmups, int warmupSeconds,
			int measurementSeconds) {
		return new OptionsBuilder().include(benchmark.getName())
			.forks(1)
			.warmupIterations(warmups)
			.warmupTime(TimeValue.seconds(warmupSeconds))
			.measurementIterations(5)
			.measurementTime(TimeValue.seconds(measurementSeconds));
	}

	private static void runGuardedLoad(BenchDatabase database, BenchOptions options) throws Exception {
		List<Integer> threadCounts = options.list("guarded-threads", "1,4,16").stream().map(Integer::valueOf).toList();
		Duration window = options.duration("guarded-window", Duration.ofSeconds(20));
		String settings = String.format(Locale.ROOT, "lease %d s, renew %d ms",
				GuardedWriteLoad.SETTINGS.duration().toSeconds(), GuardedWriteLoad.SETTINGS.renewInterval().toMillis());
		String first = Report.loadAverage();
		try (GuardedWriteLoad guarded = GuardedWriteLoad.start(database, Collections.max(threadCounts))) {
			Report.result("leader's renewal round trip, no writers (" + settings + ")",
					guarded.renewals(window).format("ms"), first);
			for (int threads : threadCounts) {
				String load = Report.loadAverage();
				GuardedWriteLoad.Comparison run = guarded.run(threads, window);
				Report.result(String.format(Locale.ROOT,
						"guarded writes, %d threads: guard + 1-row UPDATE + commit, tx/s per " + "1 s turn", threads),
						throughput(run.guarded()), load);
				Report.result(String.format(Locale.ROOT,
						"  plain writes, %d threads: 1-row UPDATE + commit, in the turns " + "between", threads),
						throughput(run.plain()), load);
				Report.result("  guarded / plain throughput, means",
						String.format(Locale.ROOT, "%.2fx", run.guarded().mean() / run.plain().mean()), load);
				Report.result(String.format(Locale.ROOT,
						"  leader's renewal round trip during the guarded turns, %d threads", threads),
						run.guarded().renewals().format("ms"), load);
				Report.result(String.format(Locale.ROOT,
						"  leader's renewal round trip during the plain turns, %d threads", threads),
						run.plain().renewals().format("ms"), load);
			}
			List<LeadershipRevokedEvent> revocations = guarded.revocations();
			long termAfter = guarded.termNow();
			Report.result("leader's lease through the writes",
					String.format(Locale.ROOT, "%d revocations, %d heartbeats that did not renew, term %d -> %d",
							revocations.size(), guarded.notRenewed(), guarded.termBefore(), termAfter),
					first);
			if (!revocations.isEmpty() || guarded.notRenewed() > 0 || termAfter != guarded.termBefore()) {
				throw new IllegalStateException("The leader lost its lease under the guarded writes: " + revocations);
			}
		}
	}

	private static String throughput(GuardedWriteLoad.Window window) {
		return window.perSecond().format("tx/s")
				+ String.format(Locale.ROOT, "; mean %.1f tx/s; %d failed", window.mean(), window.failures());
	}

	private static String env(String name, String fallback) {
		String value = System.getenv(name);
		return (value != null && !value.isBlank()) ? value : fallback;
	}

}
