package dev.leader.benchmarks;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import dev.leader.LeadershipRevokedEvent;
import dev.leader.lease.LeaseSettings;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
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
 * {@code --only=handover,failover,load,daemons,guarded,jmh,app-handover,app-idle},
 * {@code --rounds=30} (hand-overs, on the bare engine and on the sample app, and
 * failovers), {@code --load=3x1,100x1000} (idle clusters, nodes x groups),
 * {@code --load-window=PT10S} and {@code --load-windows=6}, {@code --daemons=3x7} (nodes
 * x daemons) and {@code --daemon-rounds=5} (kills), {@code --guarded-threads=1,4,16} and
 * {@code --guarded-window=PT20S} (writer threads, and how long each count runs guarded
 * and plain), {@code --database=leader_bench} (the database created for the run, dropped
 * first if it exists, and {@code <database>_app} for the sample app's nodes),
 * {@code --app-handover=daemons,no-daemons}, {@code --app-idle=default,no-validation},
 * {@code --app-settle=PT4S} and {@code --quiet-wait=PT3M} (the sample app: see
 * {@link SampleAppTimings}), {@code --server-log=<path>} (the server's log file when
 * {@code pg_current_logfile()} does not name it). The server comes from
 * {@code LEADER_BENCH_JDBC_URL} (default
 * {@code jdbc:postgresql://127.0.0.1:5432/postgres}), {@code LEADER_BENCH_JDBC_USER}
 * ({@code postgres}) and {@code LEADER_BENCH_JDBC_PASSWORD}; the user must be allowed to
 * create databases, and to read the server log ({@code pg_read_server_files}) for the
 * error-line count.
 */
public final class Benchmarks {

	/**
	 * Fast timings for the failover rounds: the lag after expiry does not depend on the
	 * lease duration, and a two-second lease keeps a round short.
	 */
	private static final LeaseSettings FAILOVER = new LeaseSettings(Duration.ofSeconds(2), Duration.ofMillis(500),
			Duration.ofMillis(500), Duration.ofMillis(300), Duration.ofSeconds(2), Duration.ofSeconds(3));

	private Benchmarks() {
	}

	public static void main(String[] args) throws Exception {
		Map<String, String> options = parse(args);
		Set<String> only = Set
			.of(options.getOrDefault("only", "handover,failover,load,daemons,guarded,jmh,app-handover,app-idle")
				.split(","));
		int rounds = Integer.parseInt(options.getOrDefault("rounds", "30"));
		String url = env("LEADER_BENCH_JDBC_URL", "jdbc:postgresql://127.0.0.1:5432/postgres");
		String user = env("LEADER_BENCH_JDBC_USER", "postgres");
		String password = env("LEADER_BENCH_JDBC_PASSWORD", "");
		Path logs = Files.createDirectories(Path.of("target", "benchmark-logs"));
		System.out.println(machine(url, user, password));
		String name = options.getOrDefault("database", "leader_bench");
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
				awaitQuietMachine(0.5, Duration.ofMinutes(3));
				database.settle();
				runJmh(database);
			}
			if (only.contains("handover")) {
				awaitQuietMachine(0.5, Duration.ofMinutes(3));
				String load = loadAverage();
				// Each round starts after more than a renew interval, so that every
				// follower has made a round trip since it started, as in a cluster that
				// has run for a while.
				List<List<Double>> handOvers = timings.handOver(LeaseSettings.defaults(), rounds,
						Duration.ofSeconds(4));
				engineHandOver = Stats.of(handOvers.get(0)).median();
				report("graceful hand-over, SIGTERM -> successor's grant (3 nodes, defaults)",
						Stats.of(handOvers.get(0)).format("ms"), load);
				report("  SIGTERM -> leader's revoke delivered (shutdown hook, stop, revoked event)",
						Stats.of(handOvers.get(1)).format("ms"), load);
				report("  leader's revoke -> successor's grant (release, NOTIFY, LISTEN, acquire, granted event)",
						Stats.of(handOvers.get(2)).format("ms"), load);
				report("  reference: the harness's SELECT 1 after idling, 1 s before each signal",
						Stats.of(handOvers.get(3)).format("ms"), load);
			}
			if (only.contains("failover")) {
				String load = loadAverage();
				List<List<Double>> failovers = timings.failover(FAILOVER, rounds, Duration.ofSeconds(1));
				report("crash failover, kill -9 -> successor's grant (3 nodes, lease 2 s, renew 500 ms)",
						Stats.of(failovers.get(0)).format("ms"), load);
				report("  grant after the lease's database expiry, database clock (takeover's acquired_at)",
						Stats.of(failovers.get(1)).format("ms"), load);
				report("  grant after the lease's database expiry, successor's grant event",
						Stats.of(failovers.get(2)).format("ms"), load);
			}
			if (only.contains("load")) {
				IdleLoad idle = new IdleLoad(database, logs);
				Duration window = Duration.parse(options.getOrDefault("load-window", "PT10S"));
				int windows = Integer.parseInt(options.getOrDefault("load-windows", "6"));
				for (String cluster : options.getOrDefault("load", "3x1,100x1000").split(",")) {
					// "3x1" runs the nodes with Hikari's defaults; "3x1v" with pool
					// validation skipped for a minute of idleness, which separates the
					// engine's statements from the pool's validation queries.
					boolean skipValidation = cluster.endsWith("v");
					String[] size = cluster.replace("v", "").split("x");
					List<String> jvmOptions = skipValidation ? List.of("-Dcom.zaxxer.hikari.aliveBypassWindowMs=60000")
							: List.of();
					String load = loadAverage();
					IdleLoad.Result result = idle.measure(Integer.parseInt(size[0]), Integer.parseInt(size[1]),
							jvmOptions, Duration.ofSeconds(10), window, windows);
					report(String.format(Locale.ROOT,
							"idle load, %d nodes x %d groups (defaults%s), tx/s per %d s window", result.nodes(),
							result.groups(), skipValidation ? ", no pool validation" : "", window.toSeconds()),
							result.perWindow().format("tx/s") + String.format(Locale.ROOT,
									"; mean %.2f tx/s; engines sent %.2f statements/s; %d rolled back, %s server error "
											+ "lines",
									result.mean(), result.statements(), result.rollbacks(),
									(result.errorLines() >= 0) ? Long.toString(result.errorLines()) : "unreadable"),
							load);
				}
			}
			if (only.contains("daemons")) {
				DaemonTimings daemons = new DaemonTimings(database, logs);
				Duration window = Duration.parse(options.getOrDefault("load-window", "PT10S"));
				int windows = Integer.parseInt(options.getOrDefault("load-windows", "6"));
				int kills = Integer.parseInt(options.getOrDefault("daemon-rounds", "5"));
				for (String cluster : options.getOrDefault("daemons", "3x7").split(",")) {
					String[] size = cluster.split("x");
					String load = loadAverage();
					DaemonTimings.Result result = daemons.measure(Integer.parseInt(size[0]), Integer.parseInt(size[1]),
							Duration.ofSeconds(10), window, windows, kills);
					report(String.format(Locale.ROOT,
							"idle load, %d nodes x 1 group x %d daemons (defaults), tx/s per %d s window",
							result.nodes(), result.daemons(), window.toSeconds()),
							result.perWindow().format("tx/s") + String.format(Locale.ROOT,
									"; mean %.2f tx/s; %d rolled back, %s server error lines", result.mean(),
									result.rollbacks(),
									(result.errorLines() >= 0) ? Long.toString(result.errorLines()) : "unreadable"),
							load);
					report("daemon reassignment, kill -9 of a non-leader -> each of its daemons' first fenced write "
							+ "elsewhere (database clock)", result.perDaemon().format("ms"), load);
					report("  the same, per killed node: until the last of its daemons runs elsewhere",
							result.perNode().format("ms"), load);
				}
			}
			if (only.contains("guarded")) {
				// Last, as it loads the machine for minutes; on a quiet machine and a
				// checkpointed database, as the JMH writes.
				awaitQuietMachine(0.5, Duration.ofMinutes(3));
				database.settle();
				runGuardedLoad(database, options);
			}
		}
		if (only.contains("app-handover") || only.contains("app-idle")) {
			// A database of its own, empty: the sample's nodes migrate it themselves, its
			// tables and the starter's.
			try (BenchDatabase database = BenchDatabase.createEmpty(url, user, password, name + "_app",
					options.get("server-log"))) {
				SampleAppTimings app = new SampleAppTimings(database, logs, SampleAppTimings.sampleAppJar());
				if (only.contains("app-handover")) {
					runSampleAppHandOver(app, options, rounds, engineHandOver);
				}
				if (only.contains("app-idle")) {
					runSampleAppIdle(app, options);
				}
			}
		}
	}

	/**
	 * The hand-over on three sample-app nodes: {@code --app-handover=daemons,no-daemons}
	 * (the sample's two daemons placed by the coordinator, or daemon assignment off),
	 * {@code --app-settle=PT4S}, and {@code --quiet-wait=PT3M}, how long to wait at most
	 * for a quiet machine first.
	 * @param app the sample-app timings
	 * @param options the command line's options
	 * @param rounds the number of hand-overs per variant
	 * @param engineHandOver the bare engine's median hand-over, or NaN if it was not
	 * measured
	 */
	private static void runSampleAppHandOver(SampleAppTimings app, Map<String, String> options, int rounds,
			double engineHandOver) throws Exception {
		Duration settle = Duration.parse(options.getOrDefault("app-settle", "PT4S"));
		for (String variant : options.getOrDefault("app-handover", "daemons").split(",")) {
			boolean daemons = !variant.equals("no-daemons");
			List<String> arguments = daemons ? List.of() : List.of("--leader.daemons.enabled=false");
			awaitQuietMachine(0.5, Duration.parse(options.getOrDefault("quiet-wait", "PT3M")));
			String load = loadAverage();
			List<SampleAppTimings.Round> results = app.handOver(arguments, daemons, rounds, settle);
			String what = "sample app: graceful hand-over, SIGTERM -> successor's grant of billing, database clock "
					+ "(3 nodes, jobs paused, " + (daemons ? "2 daemons" : "no daemons") + ")";
			Stats all = Stats.of(results.stream().map(SampleAppTimings.Round::groupGrant).toList());
			report(what, all.format("ms") + (Double.isNaN(engineHandOver) ? ""
					: String.format(Locale.ROOT, "; %.1fx the bare engine's median", all.median() / engineHandOver)),
					load);
			if (daemons) {
				report("  rounds with a daemon on the leader",
						Stats
							.of(results.stream()
								.filter((round) -> round.daemonsOnLeader() > 0)
								.map(SampleAppTimings.Round::groupGrant)
								.toList())
							.format("ms"),
						load);
				report("  rounds without a daemon on the leader",
						Stats
							.of(results.stream()
								.filter((round) -> round.daemonsOnLeader() == 0)
								.map(SampleAppTimings.Round::groupGrant)
								.toList())
							.format("ms"),
						load);
			}
			report("  SIGTERM -> the last of the leader's groups granted (default, billing)",
					Stats.of(results.stream().map(SampleAppTimings.Round::lastGrant).toList()).format("ms"), load);
			Map<String, List<Double>> steps = new LinkedHashMap<>();
			results.forEach((round) -> round.steps()
				.forEach((step, ms) -> steps.computeIfAbsent(step, (key) -> new ArrayList<>()).add(ms)));
			steps.forEach((step, samples) -> report("  SIGTERM -> " + step + " (monotonic clock)",
					Stats.of(samples).format("ms"), load));
		}
	}

	/**
	 * The idle load of three sample-app nodes: {@code --app-idle=default,no-validation}
	 * (Hikari's defaults, or pool validation skipped for a minute of idleness), with
	 * {@code --load-window} and {@code --load-windows}.
	 * @param app the sample-app timings
	 * @param options the command line's options
	 */
	private static void runSampleAppIdle(SampleAppTimings app, Map<String, String> options) throws Exception {
		Duration window = Duration.parse(options.getOrDefault("load-window", "PT10S"));
		int windows = Integer.parseInt(options.getOrDefault("load-windows", "6"));
		for (String variant : options.getOrDefault("app-idle", "default,no-validation").split(",")) {
			List<String> arguments = variant.equals("no-validation")
					? List.of("-Dcom.zaxxer.hikari.aliveBypassWindowMs=60000") : List.of();
			String load = loadAverage();
			SampleAppTimings.IdleResult result = app.idle(arguments, true, Duration.ofSeconds(15), window, windows);
			report(String.format(Locale.ROOT,
					"sample app: idle load, 3 nodes, jobs paused, 2 daemons (%s), tx/s per %d s window", variant,
					window.toSeconds()),
					result.perWindow().format("tx/s")
							+ String.format(Locale.ROOT, "; mean %.2f tx/s; %d rolled back, %s server error lines",
									result.mean(), result.rollbacks(),
									(result.errorLines() >= 0) ? Long.toString(result.errorLines()) : "unreadable"),
					load);
			printStatements("STATEMENT (server log)", result.statements());
			printStatements("STATEMENT (pg_stat_activity every 100 ms)", result.sampled());
		}
	}

	private static void runJmh(BenchDatabase database) throws Exception {
		String load = loadAverage();
		Options check = new OptionsBuilder().include(LeaderCheckBenchmark.class.getName())
			.forks(1)
			.warmupIterations(3)
			.warmupTime(TimeValue.seconds(1))
			.measurementIterations(5)
			.measurementTime(TimeValue.seconds(1))
			.build();
		for (RunResult result : new Runner(check).run()) {
			Result<?> primary = result.getPrimaryResult();
			Statistics statistics = primary.getStatistics();
			report("leader check, Leadership.isLeader (JMH average per iteration)",
					String.format(Locale.ROOT, "min %.1f / median %.1f / p99 %.1f / max %.1f ns (n=%d iterations)",
							statistics.getMin(), statistics.getPercentile(50), statistics.getPercentile(99),
							statistics.getMax(), statistics.getN()),
					load);
		}
		load = loadAverage();
		Options writes = new OptionsBuilder().include(FencedWriteBenchmark.class.getName())
			.forks(1)
			.warmupIterations(2)
			.warmupTime(TimeValue.seconds(2))
			.measurementIterations(5)
			.measurementTime(TimeValue.seconds(3))
			.jvmArgsAppend("-Dbench.url=" + database.url(), "-Dbench.user=" + database.user(),
					"-Dbench.password=" + database.password())
			.build();
		Collection<RunResult> results = new Runner(writes).run();
		Map<String, Double> medians = new LinkedHashMap<>();
		for (RunResult result : results) {
			String name = result.getParams().getBenchmark().replaceAll(".*\\.", "");
			Statistics statistics = result.getPrimaryResult().getStatistics();
			medians.put(name, statistics.getPercentile(50));
			report("single-row write in a transaction, " + name + " (JMH sample time)",
					String.format(Locale.ROOT, "min %.0f / median %.0f / p99 %.0f / max %.0f us (n=%d)",
							statistics.getMin(), statistics.getPercentile(50), statistics.getPercentile(99),
							statistics.getMax(), statistics.getN()),
					load);
		}
		if (medians.containsKey("guardedWrite") && medians.containsKey("plainWrite")) {
			report("guarded / plain write, medians",
					String.format(Locale.ROOT, "%.2fx", medians.get("guardedWrite") / medians.get("plainWrite")), load);
		}
	}

	private static void runGuardedLoad(BenchDatabase database, Map<String, String> options) throws Exception {
		List<Integer> threadCounts = Arrays.stream(options.getOrDefault("guarded-threads", "1,4,16").split(","))
			.map(Integer::valueOf)
			.toList();
		Duration window = Duration.parse(options.getOrDefault("guarded-window", "PT20S"));
		String settings = String.format(Locale.ROOT, "lease %d s, renew %d ms",
				GuardedWriteLoad.SETTINGS.duration().toSeconds(), GuardedWriteLoad.SETTINGS.renewInterval().toMillis());
		String first = loadAverage();
		try (GuardedWriteLoad guarded = GuardedWriteLoad.start(database, Collections.max(threadCounts))) {
			report("leader's renewal round trip, no writers (" + settings + ")", guarded.renewals(window).format("ms"),
					first);
			for (int threads : threadCounts) {
				String load = loadAverage();
				GuardedWriteLoad.Comparison run = guarded.run(threads, window);
				report(String.format(Locale.ROOT,
						"guarded writes, %d threads: guard + 1-row UPDATE + commit, tx/s per " + "1 s turn", threads),
						throughput(run.guarded()), load);
				report(String.format(Locale.ROOT,
						"  plain writes, %d threads: 1-row UPDATE + commit, in the turns " + "between", threads),
						throughput(run.plain()), load);
				report("  guarded / plain throughput, means",
						String.format(Locale.ROOT, "%.2fx", run.guarded().mean() / run.plain().mean()), load);
				report(String.format(Locale.ROOT, "  leader's renewal round trip during the guarded turns, %d threads",
						threads), run.guarded().renewals().format("ms"), load);
				report(String.format(Locale.ROOT, "  leader's renewal round trip during the plain turns, %d threads",
						threads), run.plain().renewals().format("ms"), load);
			}
			List<LeadershipRevokedEvent> revocations = guarded.revocations();
			long termAfter = guarded.termNow();
			report("leader's lease through the writes",
					String.format(Locale.ROOT, "%d revocations, %d heartbeats that did not renew, term %d -> %d",
							revocations.size(), guarded.notRenewed(), guarded.termBefore(), termAfter),
					first);
			if (!revocations.isEmpty() || guarded.notRenewed() > 0 || termAfter != guarded.termBefore()) {
				throw new IllegalStateException("The leader lost its lease under the guarded writes: " + revocations);
			}
		}
	}

	private static void printStatements(String source, List<SampleAppTimings.StatementRate> statements) {
		for (SampleAppTimings.StatementRate statement : statements) {
			StringBuilder nodes = new StringBuilder();
			statement.perNode()
				.forEach((node, rate) -> nodes.append(nodes.isEmpty() ? "" : ", ")
					.append(String.format(Locale.ROOT, "%s %.2f", node, rate)));
			System.out.printf(Locale.ROOT, "%s %6.2f/s [%s] %s%n", source, statement.perSecond(), nodes,
					statement.text());
		}
	}

	private static String throughput(GuardedWriteLoad.Window window) {
		return window.perSecond().format("tx/s")
				+ String.format(Locale.ROOT, "; mean %.1f tx/s; %d failed", window.mean(), window.failures());
	}

	static void report(String what, String figures, String loadBefore) {
		System.out.printf("RESULT %-95s %s  [load %s -> %s]%n", what, figures, loadBefore, loadAverage());
	}

	/**
	 * Waits, for a bounded time, until the 1-minute load average is below the threshold;
	 * a pause, never a synchronisation. Prints how long it waited and the load it ended
	 * at.
	 * @param threshold the load average to get below
	 * @param atMost how long to wait at most
	 */
	static void awaitQuietMachine(double threshold, Duration atMost) throws InterruptedException {
		long start = System.nanoTime();
		double load = ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
		while (load >= threshold && System.nanoTime() - start < atMost.toNanos()) {
			TimeUnit.SECONDS.sleep(5);
			load = ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
		}
		System.out.printf(Locale.ROOT, "NOTE waited %d s for a 1-minute load average below %.1f: %.2f%n",
				TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start), threshold, load);
	}

	static String loadAverage() {
		try {
			String[] loads = Files.readString(Path.of("/proc/loadavg")).split(" ");
			return loads[0] + " " + loads[1] + " " + loads[2];
		}
		catch (Exception ex) {
			return String.format(Locale.ROOT, "%.2f",
					ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
		}
	}

	private static String machine(String url, String user, String password) {
		String server;
		try (Connection connection = DriverManager.getConnection(url, user, password);
				Statement statement = connection.createStatement();
				ResultSet row = statement.executeQuery("SELECT current_setting('server_version'), "
						+ "current_setting('synchronous_commit'), current_setting('fsync')")) {
			row.next();
			server = "PostgreSQL " + row.getString(1) + " (synchronous_commit=" + row.getString(2) + ", fsync="
					+ row.getString(3) + ")";
		}
		catch (Exception ex) {
			server = "PostgreSQL unreachable: " + ex.getMessage();
		}
		return String.format(Locale.ROOT, "MACHINE %d cores, Java %s, %s, %s, load %s",
				Runtime.getRuntime().availableProcessors(), System.getProperty("java.version"),
				System.getProperty("os.name") + " " + System.getProperty("os.version"), server, loadAverage());
	}

	private static Map<String, String> parse(String[] args) {
		Map<String, String> options = new LinkedHashMap<>();
		for (String arg : args) {
			int equals = arg.indexOf('=');
			if (!arg.startsWith("--") || equals < 0) {
				throw new IllegalArgumentException("Expected --name=value but got '" + arg + "'");
			}
			options.put(arg.substring(2, equals), arg.substring(equals + 1));
		}
		return options;
	}

	private static String env(String name, String fallback) {
		String value = System.getenv(name);
		return (value != null && !value.isBlank()) ? value : fallback;
	}

}
