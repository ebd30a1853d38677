package dev.leader.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Predicate;

import dev.leader.lease.LeaseSettings;

/**
 * The sample application's part of {@link Benchmarks}: runs {@link SampleAppTimings} for
 * each variant the options ask for and reports its figures.
 */
final class SampleAppBenchmarks {

	private SampleAppBenchmarks() {
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
	static void handOver(SampleAppTimings app, BenchOptions options, int rounds, double engineHandOver)
			throws Exception {
		Duration settle = options.duration("app-settle", Duration.ofSeconds(4));
		for (String variant : options.list("app-handover", "daemons")) {
			boolean daemons = !variant.equals("no-daemons");
			List<String> arguments = daemons ? List.of() : List.of("--leader.daemons.enabled=false");
			Report.awaitQuietMachine(0.5, options.duration("quiet-wait", Duration.ofMinutes(3)));
			String load = Report.loadAverage();
			List<SampleAppTimings.Round> results = app.handOver(arguments, daemons, rounds, settle);
			String what = "sample app: graceful hand-over, SIGTERM -> successor's grant of billing, database clock "
					+ "(3 nodes, jobs paused, " + (daemons ? "2 daemons" : "no daemons") + ")";
			Stats all = Stats.of(results.stream().map(SampleAppTimings.Round::groupGrant).toList());
			Report.result(what, all.format("ms") + (Double.isNaN(engineHandOver) ? ""
					: String.format(Locale.ROOT, "; %.1fx the bare engine's median", all.median() / engineHandOver)),
					load);
			if (daemons) {
				Report.result("  rounds with a daemon on the leader",
						groupGrants(results, (round) -> round.daemonsOnLeader() > 0), load);
				Report.result("  rounds without a daemon on the leader",
						groupGrants(results, (round) -> round.daemonsOnLeader() == 0), load);
			}
			Report.result("  SIGTERM -> the last of the leader's groups granted (default, billing)",
					Stats.of(results.stream().map(SampleAppTimings.Round::lastGrant).toList()).format("ms"), load);
			Map<String, List<Double>> steps = new LinkedHashMap<>();
			results.forEach((round) -> round.steps()
				.forEach((step, ms) -> steps.computeIfAbsent(step, (key) -> new ArrayList<>()).add(ms)));
			steps.forEach((step, samples) -> Report.result("  SIGTERM -> " + step + " (monotonic clock)",
					Stats.of(samples).format("ms"), load));
		}
	}

	private static String groupGrants(List<SampleAppTimings.Round> results, Predicate<SampleAppTimings.Round> which) {
		return Stats.of(results.stream().filter(which).map(SampleAppTimings.Round::groupGrant).toList()).format("ms");
	}

	/**
	 * The crash failover on three sample-app nodes, with the lease settings of the
	 * bare-engine failover: kill -9 of the leader of {@code billing}, which the sample
	 * opts in to crash takeover ({@code leader.lease.crash-takeover-groups}), until the
	 * successor's grant, and that grant's lag after the dead lease's expiry, both on the
	 * database clock. {@code --app-settle=PT4S} before each round, and
	 * {@code --quiet-wait=PT3M}.
	 * @param app the sample-app timings
	 * @param options the command line's options
	 * @param rounds the number of failovers
	 * @param settings the lease settings of every node
	 */
	static void failover(SampleAppTimings app, BenchOptions options, int rounds, LeaseSettings settings)
			throws Exception {
		List<String> arguments = List.of("--leader.lease.duration=" + settings.duration(),
				"--leader.lease.renew-interval=" + settings.renewInterval(),
				"--leader.lease.retry-interval=" + settings.retryInterval(),
				"--leader.lease.safety-margin=" + settings.safetyMargin(),
				"--leader.node.expiry=" + settings.nodeExpiry(),
				"--leader.lease.yield-cooldown=" + settings.yieldCooldown());
		Report.awaitQuietMachine(0.5, options.duration("quiet-wait", Duration.ofMinutes(3)));
		String load = Report.loadAverage();
		List<SampleAppTimings.Failover> results = app.failover(arguments, true, rounds,
				options.duration("app-settle", Duration.ofSeconds(4)));
		Report.result(
				String.format(Locale.ROOT,
						"sample app: crash failover, kill -9 -> successor's grant of billing (crash takeover, the "
								+ "sample's default), database clock (3 nodes, 2 daemons, lease %d s, renew %d ms)",
						settings.duration().toSeconds(), settings.renewInterval().toMillis()),
				Stats.of(results.stream().map(SampleAppTimings.Failover::grant).toList()).format("ms"), load);
		Report.result(
				"  grant after the lease's database expiry, database clock (takeover's acquired_at; "
						+ "negative: before it)",
				Stats.of(results.stream().map(SampleAppTimings.Failover::afterExpiry).toList()).format("ms"), load);
	}

	/**
	 * The idle load of three sample-app nodes: {@code --app-idle=default,no-validation}
	 * (Hikari's defaults, or pool validation skipped for a minute of idleness), with
	 * {@code --load-window} and {@code --load-windows}.
	 * @param app the sample-app timings
	 * @param options the command line's options
	 */
	static void idle(SampleAppTimings app, BenchOptions options) throws Exception {
		Duration window = options.duration("load-window", Duration.ofSeconds(10));
		int windows = options.integer("load-windows", 6);
		for (String variant : options.list("app-idle", "default,no-validation")) {
			List<String> arguments = variant.equals("no-validation")
					? List.of("-Dcom.zaxxer.hikari.aliveBypassWindowMs=60000") : List.of();
			String load = Report.loadAverage();
			SampleAppTimings.IdleResult result = app.idle(arguments, true, Duration.ofSeconds(15), window, windows);
			Report.result(String.format(Locale.ROOT,
					"sample app: idle load, 3 nodes, jobs paused, 2 daemons (%s), per %d s window", variant,
					window.toSeconds()), result.load().format(), load);
			if (app.dialect() == Dialect.POSTGRESQL) {
				System.out.printf(Locale.ROOT,
						"SERVER autovacuum ran %d vacuum(s) and %d analyze(s) of the "
								+ "database's tables during the measurement%n",
						result.autovacuums(), result.autoanalyzes());
			}
			printStatements("STATEMENT (server log)", result.statements());
			printStatements("STATEMENT (pg_stat_activity every 100 ms)", result.sampled());
		}
	}

	private static void printStatements(String source, List<StatementRate> statements) {
		for (StatementRate statement : statements) {
			StringBuilder nodes = new StringBuilder();
			statement.perNode()
				.forEach((node, rate) -> nodes.append(nodes.isEmpty() ? "" : ", ")
					.append(String.format(Locale.ROOT, "%s %.2f", node, rate)));
			System.out.printf(Locale.ROOT, "%s %6.2f/s [%s] %s%n", source, statement.perSecond(), nodes,
					statement.text());
		}
	}

}
