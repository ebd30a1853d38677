package dev.leader.benchmarks;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import dev.leader.test.EtcdCluster;
import org.jspecify.annotations.Nullable;

/**
 * The figures of {@code --only=etcd-app}: three nodes of the sample application (its
 * executable jar, {@link SampleAppNode}) coordinating through PostgreSQL, then the same
 * three coordinating through an etcd cluster of three members
 * ({@code --leader.etcd.endpoints}, a key prefix of their own), in the same run, with the
 * ratio etcd / PostgreSQL. On etcd the sample keeps PostgreSQL as its {@code DataSource}
 * (its tables), and its crash-takeover group is emptied
 * ({@code --leader.lease.crash-takeover-groups=}), which etcd refuses. The sample's jobs
 * are paused; its two daemons run.
 * <ol>
 * <li>Graceful hand-over, {@code --rounds}: SIGTERM to the leader of {@code billing} →
 * the successor's {@code TIMING granted billing} line, on the machine's monotonic clock
 * on both sides (on etcd there is no lease row to read the database clock from). The
 * stopped node is replaced every round.</li>
 * <li>Idle load, {@code --load-window} × {@code --load-windows}, 15 s after the cluster
 * is complete: on PostgreSQL the transactions of the sample's database per second; on
 * etcd the gRPC messages the members received from the nodes per second
 * ({@link EtcdMetrics}), and the transactions per second the same nodes still caused on
 * PostgreSQL.</li>
 * </ol>
 * Beside the sample on etcd, on the same cluster, etcd's own election recipe: three
 * {@code etcdctl elect} candidates ({@link EtcdElectRecipe}), each side alone on the
 * cluster, with the ratio ours / theirs: the graceful hand-over (SIGINT, on which the
 * elected candidate resigns → the next one's election printed), the idle load per node,
 * and {@code --etcd-crash-rounds=5} kills (kill -9 → the successor's grant, ours on the
 * default 10 s lease, theirs on the recipe's 60 s session, which {@code etcdctl elect}
 * 3.4 does not let its user change), each against its time to live and half a second.
 */
final class EtcdAppBenchmarks {

	private static final String GROUP = "billing";

	private static final long READY_SECONDS = 180;

	private static final Duration LEADER_TIMEOUT = Duration.ofSeconds(60);

	private static final int NODES = 3;

	/** The starter's default lease duration and node expiry. */
	private static final Duration LEASE = Duration.ofSeconds(10);

	private static final String OURS = "ours: sample app on etcd, defaults, 2 daemons, jobs paused";

	private static final String THEIRS = "theirs: etcd's election recipe, etcdctl elect (clientv3 concurrency), "
			+ "defaults";

	private EtcdAppBenchmarks() {
	}

	static void run(BenchDatabase database, Path logs, Path jar, BenchOptions options, int rounds) throws Exception {
		Duration settle = options.duration("app-settle", Duration.ofSeconds(4));
		Duration window = options.duration("load-window", Duration.ofSeconds(10));
		int windows = options.integer("load-windows", 6);
		int crashRounds = options.integer("etcd-crash-rounds", 5);
		// Fails before anything starts when etcdctl is missing.
		EtcdElectRecipe.etcdctl();
		try (EtcdCluster etcd = EtcdCluster.start(3)) {
			System.out.println("NOTE etcd: 3 members on " + String.join(",", etcd.endpoints()));
			Report.awaitQuietMachine(0.5, options.duration("quiet-wait", Duration.ofMinutes(3)));
			String load = Report.loadAverage();
			List<Double> postgres = handOver(cluster(database, logs, jar, "pg-app-handover-"), List.of(), rounds,
					settle, null);
			List<Double> onEtcd = handOver(cluster(database, logs, jar, "etcd-app-handover-"),
					etcdArguments(etcd, "handover", options), rounds, settle, etcd);
			String recipeLoad = Report.loadAverage();
			List<Double> recipe = recipeRounds(etcd, logs, "handover", rounds, settle, false);
			String what = "sample app: graceful hand-over, SIGTERM -> successor's granted event of billing, monotonic "
					+ "clock (3 nodes, jobs paused, 2 daemons)";
			Report.result(what + ", PostgreSQL", Stats.of(postgres).format("ms"), load);
			Report.result(what + ", etcd", Stats.of(onEtcd).format("ms"), load);
			ratio("  etcd / PostgreSQL, medians", Stats.of(onEtcd).median(), Stats.of(postgres).median(), load);
			compare("vs etcd's recipe: graceful hand-over, ours SIGTERM -> successor's granted event; theirs SIGINT "
					+ "(resign) -> next candidate's election printed (3 each, same etcd cluster)", onEtcd, load, recipe,
					recipeLoad);

			load = Report.loadAverage();
			LoadWindows postgresIdle = idleOnPostgres(cluster(database, logs, jar, "pg-app-idle-"), database, window,
					windows);
			IdleOnEtcd etcdIdle = idleOnEtcd(cluster(database, logs, jar, "etcd-app-idle-"), database, etcd,
					etcdArguments(etcd, "idle", options), window, windows);
			recipeLoad = Report.loadAverage();
			IdleOnEtcd recipeIdle = idleOfRecipe(etcd, logs, database, window, windows);
			String idle = String.format(Locale.ROOT,
					"sample app: idle load, 3 nodes, jobs paused, 2 daemons, Hikari's defaults, per %d s window",
					window.toSeconds());
			Report.result(idle + ", PostgreSQL", postgresIdle.format(), load);
			Report.result(idle + ", etcd", etcdIdle.format(), load);
			Report.result("  etcd per second by gRPC method", etcdIdle.formatByMethod(), load);
			Report.result("  the nodes on etcd, meanwhile on PostgreSQL (their DataSource)",
					etcdIdle.database().format(), load);
			ratio("  etcd requests/s / PostgreSQL transactions/s", etcdIdle.received(), postgresIdle.mean(), load);
			String perNode = "vs etcd's recipe: idle load, requests (gRPC messages received) per node per second, "
					+ "3 each alone on the cluster";
			Report.result(perNode + ", " + OURS, etcdIdle.formatPerNode(), load);
			Report.result("  " + THEIRS, recipeIdle.formatPerNode(), recipeLoad);
			Report.result("  theirs per second by gRPC method, all 3", recipeIdle.formatByMethod(), recipeLoad);
			Report.result("  ours / theirs, requests per node per second",
					perSecondRatio(etcdIdle.received(), recipeIdle.received()), load);
			Report.result("  ours / theirs, calls and streams started per node per second",
					perSecondRatio(etcdIdle.started(), recipeIdle.started()), load);

			if (crashRounds > 0) {
				crash(database, logs, jar, etcd, crashRounds, settle, options);
			}
		}
	}

	/**
	 * kill -9 of the leader of {@code billing} → the successor's granted event, ours on
	 * etcd with the starter's default lease (and node expiry), and the elected etcdctl →
	 * the next candidate's election, on its session's time to live; each against its
	 * bound, the time to live and half a second.
	 * @param database the sample's database
	 * @param logs the directory of the nodes' logs
	 * @param jar the sample application's executable jar
	 * @param etcd the cluster
	 * @param rounds the kills of each side
	 * @param settle how long each side idles before a kill
	 * @param options the command line's options
	 */
	private static void crash(BenchDatabase database, Path logs, Path jar, EtcdCluster etcd, int rounds,
			Duration settle, BenchOptions options) throws Exception {
		String load = Report.loadAverage();
		List<String> arguments = new ArrayList<>(etcdArguments(etcd, "crash", options));
		// The defaults, named so that the bound below stays theirs: on etcd the leader's
		// group key lives on its node's lease.
		arguments.add("--leader.lease.duration=" + LEASE);
		arguments.add("--leader.node.expiry=" + LEASE);
		List<Double> ours = crashRounds(cluster(database, logs, jar, "etcd-app-crash-"), arguments, rounds, settle,
				etcd);
		String recipeLoad = Report.loadAverage();
		List<Double> theirs = recipeRounds(etcd, logs, "crash", rounds, settle, true);
		Duration oursBound = LEASE.plusMillis(500);
		Duration theirsBound = EtcdElectRecipe.SESSION_TTL.plusMillis(500);
		compare(String.format(Locale.ROOT,
				"vs etcd's recipe: crash, kill -9 of the leader -> successor's granted event / next candidate's "
						+ "election printed (ours lease %d s, theirs session TTL %d s, etcdctl elect 3.4 has no flag "
						+ "for it)",
				LEASE.toSeconds(), EtcdElectRecipe.SESSION_TTL.toSeconds()), ours, load, theirs, recipeLoad);
		Report.result(String.format(Locale.ROOT, "  ours over the bound, lease + 0.5 s = %d ms", oursBound.toMillis()),
				overBound(ours, oursBound), load);
		Report.result(String.format(Locale.ROOT, "  theirs over the bound, session TTL + 0.5 s = %d ms",
				theirsBound.toMillis()), overBound(theirs, theirsBound), recipeLoad);
		Report.result("  median / time to live, ours and theirs",
				String.format(Locale.ROOT, "%.2f and %.2f", Stats.of(ours).median() / LEASE.toMillis(),
						Stats.of(theirs).median() / EtcdElectRecipe.SESSION_TTL.toMillis()),
				load);
	}

	private static String perSecondRatio(double ours, double theirs) {
		return (theirs > 0) ? String.format(Locale.ROOT, "%.2fx", ours / theirs)
				: String.format(Locale.ROOT, "theirs none in the windows, ours %.3f/s", ours);
	}

	private static String overBound(List<Double> samples, Duration bound) {
		long over = samples.stream().filter((ms) -> ms > bound.toMillis()).count();
		return over + " of " + samples.size() + " rounds";
	}

	private static List<Double> recipeRounds(EtcdCluster etcd, Path logs, String name, int rounds, Duration settle,
			boolean crash) throws Exception {
		try (EtcdElectRecipe race = new EtcdElectRecipe(etcd.endpoints(), logs, "etcdctl-" + name + "-",
				election(name))) {
			race.start();
			return race.rounds(rounds, settle, crash);
		}
	}

	private static String election(String name) {
		return "leader-bench/elect-" + name + "-" + System.nanoTime() + "/" + GROUP;
	}

	/**
	 * Prints a figure of ours, of etcd's recipe, and the ratio of their medians, ours /
	 * theirs, as {@link PeerBenchmarks} prints the peer's.
	 * @param what what was measured
	 * @param ours our samples, in milliseconds
	 * @param oursLoad the load average before ours
	 * @param theirs the recipe's samples, in milliseconds
	 * @param theirsLoad the load average before theirs
	 */
	private static void compare(String what, List<Double> ours, String oursLoad, List<Double> theirs,
			String theirsLoad) {
		Stats oursStats = Stats.of(ours);
		Stats theirsStats = Stats.of(theirs);
		Report.result(what + ", " + OURS, oursStats.format("ms"), oursLoad);
		Report.result("  " + THEIRS, theirsStats.format("ms"), theirsLoad);
		Report.result("  ours / theirs, medians",
				String.format(Locale.ROOT, "%.2fx", oursStats.median() / theirsStats.median()), oursLoad);
	}

	private static SampleCluster cluster(BenchDatabase database, Path logs, Path jar, String prefix) {
		return new SampleCluster(logs, prefix,
				(name, arguments, log) -> SampleAppNode.start(jar, database, name, arguments, log));
	}

	/**
	 * The arguments of a sample node on etcd: the cluster, a prefix of its own, no crash
	 * takeover, and {@code --app-etcd-timeout} as {@code leader.etcd.timeout} if given.
	 * @param etcd the cluster
	 * @param name the figure's name, in the prefix
	 * @param options the command line's options
	 * @return the arguments
	 */
	private static List<String> etcdArguments(EtcdCluster etcd, String name, BenchOptions options) {
		List<String> arguments = new ArrayList<>(
				List.of("--leader.etcd.endpoints=" + String.join(",", etcd.endpoints()),
						"--leader.etcd.prefix=leader-bench/app-" + name + "-" + System.nanoTime(),
						"--leader.lease.crash-takeover-groups="));
		String timeout = options.get("app-etcd-timeout");
		if (timeout != null) {
			// On a loaded machine a node's first call to etcd, on a cold JVM, can take
			// longer than the default 3 s, and the node then fails to start.
			arguments.add("--leader.etcd.timeout=" + Duration.parse(timeout));
		}
		return arguments;
	}

	private static List<Double> handOver(SampleCluster cluster, List<String> arguments, int rounds, Duration settle,
			@Nullable EtcdCluster etcd) throws Exception {
		return leaderRounds(cluster, arguments, rounds, settle, etcd, false);
	}

	private static List<Double> crashRounds(SampleCluster cluster, List<String> arguments, int rounds, Duration settle,
			EtcdCluster etcd) throws Exception {
		return leaderRounds(cluster, arguments, rounds, settle, etcd, true);
	}

	/**
	 * Times rounds of the end of {@code billing}'s leader: SIGTERM, or SIGKILL if
	 * {@code crash}, → the successor's granted event; the ended node is replaced every
	 * round.
	 * @param cluster the nodes, not started
	 * @param arguments further arguments of every node
	 * @param rounds how many rounds
	 * @param settle how long the cluster idles before each signal
	 * @param etcd the cluster the nodes coordinate through, to check they do, or
	 * {@code null} on PostgreSQL
	 * @param crash whether the leader is killed rather than stopped
	 * @return the rounds, in milliseconds
	 */
	private static List<Double> leaderRounds(SampleCluster cluster, List<String> arguments, int rounds, Duration settle,
			@Nullable EtcdCluster etcd, boolean crash) throws Exception {
		List<Double> samples = new ArrayList<>();
		try {
			double before = (etcd != null) ? transactions(etcd) : 0;
			cluster.start(arguments);
			if (etcd != null) {
				requireOnEtcd(etcd, before);
			}
			for (int round = 0; round < rounds; round++) {
				SampleAppNode leader = awaitLeader(cluster);
				TimeUnit.NANOSECONDS.sleep(settle.toNanos());
				leader = awaitLeader(cluster);
				long term = term(leader.last((t) -> isLeadership(t, "granted")).orElseThrow());
				long signalledAt = System.nanoTime();
				if (crash) {
					leader.kill();
				}
				else {
					leader.sigterm();
				}
				SampleAppNode.Timing grant = awaitGrantAbove(cluster, leader, term);
				samples.add((grant.nanoTime() - signalledAt) / 1e6);
				if (!leader.awaitExit(60)) {
					throw new IllegalStateException(leader.name() + " did not exit within 60 s of its signal");
				}
				cluster.replace(leader, arguments);
			}
		}
		finally {
			cluster.close();
		}
		return samples;
	}

	/**
	 * Fails unless the nodes' requests reach the etcd cluster: a sample jar without
	 * etcd's client would ignore {@code leader.etcd.endpoints} and coordinate through its
	 * database, and its figures would be PostgreSQL's. Counted from before the nodes
	 * started: nodes that are settled by the time they answer ready send none when idle.
	 * @param etcd the cluster
	 * @param before the transactions etcd had received before the nodes started
	 */
	private static void requireOnEtcd(EtcdCluster etcd, double before) throws Exception {
		EtcdMetrics metrics = new EtcdMetrics(etcd.endpoints());
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
		while (metrics.read().received().getOrDefault("Txn", 0.0) <= before) {
			if (System.nanoTime() > deadline) {
				throw new IllegalStateException("The sample nodes sent no transaction to etcd within 15 s: the sample "
						+ "jar has no etcd client (io.etcd:jetcd-core), so leader.etcd.endpoints does nothing. Build "
						+ "a sample that has it, or give one with -Dbench.sample-app.jar");
			}
			TimeUnit.MILLISECONDS.sleep(250);
		}
	}

	private static double transactions(EtcdCluster etcd) throws Exception {
		return new EtcdMetrics(etcd.endpoints()).read().received().getOrDefault("Txn", 0.0);
	}

	private static SampleAppNode awaitLeader(SampleCluster cluster) throws InterruptedException {
		long deadline = System.nanoTime() + LEADER_TIMEOUT.toNanos();
		while (true) {
			List<SampleAppNode> leaders = cluster.nodes().stream().filter(EtcdAppBenchmarks::leads).toList();
			if (leaders.size() == 1) {
				return leaders.get(0);
			}
			if (System.nanoTime() > deadline) {
				throw new IllegalStateException("Not one leader of " + GROUP + " among the sample nodes within "
						+ LEADER_TIMEOUT.toSeconds() + " s, but " + leaders.size());
			}
			TimeUnit.MILLISECONDS.sleep(50);
		}
	}

	private static boolean leads(SampleAppNode node) {
		Optional<SampleAppNode.Timing> last = node
			.last((t) -> isLeadership(t, "granted") || isLeadership(t, "revoked"));
		return node.isAlive() && last.isPresent() && last.get().step().equals("granted");
	}

	private static SampleAppNode.Timing awaitGrantAbove(SampleCluster cluster, SampleAppNode stopped, long term)
			throws InterruptedException {
		long deadline = System.nanoTime() + LEADER_TIMEOUT.toNanos();
		while (true) {
			Optional<SampleAppNode.Timing> grant = cluster.nodes()
				.stream()
				.filter((node) -> node != stopped)
				.flatMap((node) -> node.first((t) -> isLeadership(t, "granted") && term(t) > term).stream())
				.findFirst();
			if (grant.isPresent()) {
				return grant.get();
			}
			if (System.nanoTime() > deadline) {
				throw new IllegalStateException("No successor was granted " + GROUP + " within "
						+ LEADER_TIMEOUT.toSeconds() + " s of the leader's end");
			}
			TimeUnit.MILLISECONDS.sleep(10);
		}
	}

	private static boolean isLeadership(SampleAppNode.Timing timing, String step) {
		return timing.step().equals(step) && timing.details().startsWith(GROUP + " ");
	}

	private static long term(SampleAppNode.Timing timing) {
		return Long.parseLong(timing.details().split(" ")[1]);
	}

	private static LoadWindows idleOnPostgres(SampleCluster cluster, BenchDatabase database, Duration window,
			int windows) throws Exception {
		try {
			startIdle(cluster, List.of());
			return LoadWindows.measure(database, window, windows);
		}
		finally {
			cluster.close();
		}
	}

	private static IdleOnEtcd idleOnEtcd(SampleCluster cluster, BenchDatabase database, EtcdCluster etcd,
			List<String> arguments, Duration window, int windows) throws Exception {
		try {
			double before = transactions(etcd);
			startIdle(cluster, arguments);
			requireOnEtcd(etcd, before);
			return IdleOnEtcd.measure(etcd, database, window, windows);
		}
		finally {
			cluster.close();
		}
	}

	/**
	 * The idle load of three {@code etcdctl elect} candidates, alone on the cluster,
	 * counted as the sample's on etcd: from the same wait after the race has its leader,
	 * over the same windows.
	 * @param etcd the cluster
	 * @param logs the directory of the candidates' logs
	 * @param database the sample's database, whose transactions are counted meanwhile
	 * @param window the length of one window
	 * @param windows how many windows
	 * @return the load
	 */
	private static IdleOnEtcd idleOfRecipe(EtcdCluster etcd, Path logs, BenchDatabase database, Duration window,
			int windows) throws Exception {
		try (EtcdElectRecipe race = new EtcdElectRecipe(etcd.endpoints(), logs, "etcdctl-idle-", election("idle"))) {
			race.start();
			race.awaitLeader();
			TimeUnit.SECONDS.sleep(15);
			return IdleOnEtcd.measure(etcd, database, window, windows);
		}
	}

	private static void startIdle(SampleCluster cluster, List<String> arguments) throws Exception {
		cluster.start(arguments);
		awaitLeader(cluster);
		// As the sample's idle load on PostgreSQL: counted 15 s after the cluster is
		// complete.
		TimeUnit.SECONDS.sleep(15);
	}

	private static void ratio(String what, double etcd, double postgres, String load) {
		Report.result(what,
				String.format(Locale.ROOT, "%.2fx (etcd %.2f, PostgreSQL %.2f)", etcd / postgres, etcd, postgres),
				load);
	}

	/**
	 * The idle load of three nodes on etcd, ours or etcd's recipe's.
	 *
	 * @param perWindow messages received per second, per window
	 * @param received messages received per second over all windows
	 * @param started calls and streams started per second over all windows
	 * @param byMethod messages received per second, by gRPC method
	 * @param startedByMethod calls and streams started per second, by gRPC method
	 * @param database the load the same nodes caused on PostgreSQL meanwhile
	 */
	private record IdleOnEtcd(Stats perWindow, double received, double started, Map<String, Double> byMethod,
			Map<String, Double> startedByMethod, LoadWindows database) {

		/**
		 * Counts the cluster's gRPC requests over the windows, and the database's
		 * transactions over the same windows.
		 * @param etcd the cluster
		 * @param database the sample's database
		 * @param window the length of one window
		 * @param windows how many windows
		 * @return the load
		 */
		static IdleOnEtcd measure(EtcdCluster etcd, BenchDatabase database, Duration window, int windows)
				throws Exception {
			EtcdMetrics metrics = new EtcdMetrics(etcd.endpoints());
			EtcdMetrics.Counters start = metrics.read();
			long began = System.nanoTime();
			List<Double> rates = new ArrayList<>();
			EtcdMetrics.Counters[] previous = { start };
			LoadWindows onDatabase = LoadWindows.measure(database, window, windows, () -> {
				EtcdMetrics.Counters now = metrics.read();
				rates.add((now.totalReceived() - previous[0].totalReceived()) / (window.toNanos() / 1e9));
				previous[0] = now;
			});
			double seconds = (System.nanoTime() - began) / 1e9;
			EtcdMetrics.Counters end = previous[0];
			return new IdleOnEtcd(Stats.of(rates), (end.totalReceived() - start.totalReceived()) / seconds,
					(end.started() - start.started()) / seconds, rates(start.received(), end.received(), seconds),
					rates(start.startedByMethod(), end.startedByMethod(), seconds), onDatabase);
		}

		private static Map<String, Double> rates(Map<String, Double> start, Map<String, Double> end, double seconds) {
			Map<String, Double> byMethod = new TreeMap<>();
			end.forEach((method, count) -> {
				double rate = (count - start.getOrDefault(method, 0.0)) / seconds;
				if (rate > 0) {
					byMethod.put(method, rate);
				}
			});
			return byMethod;
		}

		String format() {
			return this.perWindow.format("requests/s") + String.format(Locale.ROOT,
					"; mean %.2f requests/s (gRPC messages received), %.2f calls and streams started/s", this.received,
					this.started);
		}

		String formatPerNode() {
			return String.format(Locale.ROOT, "%.3f requests/s, %.3f calls and streams started/s",
					this.received / NODES, this.started / NODES);
		}

		String formatByMethod() {
			return "received " + format(this.byMethod) + "; started " + format(this.startedByMethod);
		}

		private static String format(Map<String, Double> byMethod) {
			return byMethod.isEmpty() ? "none"
					: byMethod.entrySet()
						.stream()
						.map((entry) -> String.format(Locale.ROOT, "%s %.3f", entry.getKey(), entry.getValue()))
						.collect(Collectors.joining(", "));
		}

	}

}
