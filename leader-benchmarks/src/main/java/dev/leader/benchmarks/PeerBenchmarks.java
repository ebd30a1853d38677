package dev.leader.benchmarks;

import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * {@code --only=peer}: the sample app beside its peer, Spring Integration's JDBC leader
 * election ({@link PeerTimings}), in the same run and the same database, each with its
 * library's defaults: graceful hand-over, crash failover and idle load of three nodes,
 * ours first and then the peer's, figure by figure, with the database's own round trip as
 * the floor. Every figure is printed for ours, for the peer, and as the ratio peer /
 * ours.
 */
final class PeerBenchmarks {

	private static final String OURS = "ours: sample app, defaults, 2 daemons, jobs paused";

	private static final String PEER = "peer: Spring Integration JdbcLockRegistry + LockRegistryLeaderInitiator, defaults";

	private static final int FLOOR_SAMPLES = 20;

	private PeerBenchmarks() {
	}

	/**
	 * Runs the comparison: {@code --peer-rounds=10} hand-overs and failovers of each,
	 * {@code --app-settle=PT4S} before each, the idle load over {@code --load-window} and
	 * {@code --load-windows}, once the machine is quiet ({@code --quiet-wait}).
	 * @param app the sample app's timings
	 * @param peer the peer's timings
	 * @param database the sample app's database, where both run
	 * @param options the command line's options
	 */
	static void run(SampleAppTimings app, PeerTimings peer, BenchDatabase database, BenchOptions options)
			throws Exception {
		int rounds = options.integer("peer-rounds", 10);
		Duration settle = options.duration("app-settle", Duration.ofSeconds(4));
		Report.awaitQuietMachine(0.5, options.duration("quiet-wait", Duration.ofMinutes(3)));

		String load = Report.loadAverage();
		Report.result("vs peer: floor, the harness's SELECT 1 on a connection idle for 0.5 s, no node running",
				Stats.of(floor(database)).format("ms"), load);

		load = Report.loadAverage();
		List<SampleAppTimings.Round> handOvers = app.handOver(List.of(), true, rounds, settle);
		String peerLoad = Report.loadAverage();
		List<List<Double>> peerHandOvers = peer.handOver(rounds, settle);
		compare("vs peer: graceful hand-over, SIGTERM -> successor's granted event (3 nodes)",
				handOvers.stream().map((round) -> round.steps().get("successor's granted event")).toList(), load,
				peerHandOvers.get(0), peerLoad);
		Report.result("  ours, SIGTERM -> successor's acquired_at, database clock",
				Stats.of(handOvers.stream().map(SampleAppTimings.Round::groupGrant).toList()).format("ms"), load);
		// The stopped leader's revoked event may never show: it is published from the
		// election's thread while the context closes.
		Report.result("  peer, SIGTERM -> leader's revoked event", peerHandOvers.get(1).isEmpty()
				? "not printed by the stopped leader in any round" : Stats.of(peerHandOvers.get(1)).format("ms"),
				peerLoad);

		load = Report.loadAverage();
		List<SampleAppTimings.Failover> failovers = app.failover(List.of(), true, rounds, settle);
		peerLoad = Report.loadAverage();
		List<List<Double>> peerFailovers = peer.failover(rounds, settle);
		compare("vs peer: crash failover, kill -9 -> successor's granted event (3 nodes; ours lease 10 s, peer lock "
				+ "TTL 10 s)", failovers.stream().map(SampleAppTimings.Failover::grantEvent).toList(), load,
				peerFailovers.get(0), peerLoad);
		Report.result("  ours, grant after the lease's expires_at, database clock",
				Stats.of(failovers.stream().map(SampleAppTimings.Failover::afterExpiry).toList()).format("ms"), load);
		Report.result("  peer, grant after the lock's EXPIRED_AFTER, the nodes' wall clock",
				Stats.of(peerFailovers.get(1)).format("ms"), peerLoad);

		Duration window = options.duration("load-window", Duration.ofSeconds(10));
		int windows = options.integer("load-windows", 6);
		load = Report.loadAverage();
		LoadWindows ours = app.idle(List.of(), true, Duration.ofSeconds(15), window, windows).load();
		// The sample app's idle load has the server log every statement of the database's
		// new sessions; the peer's run the same way (a no-op once set, or without the
		// right).
		database.serverLog().logStatements();
		peerLoad = Report.loadAverage();
		LoadWindows theirs = peer.idle(Duration.ofSeconds(15), window, windows);
		String what = String.format(Locale.ROOT, "vs peer: idle load, 3 nodes, per %d s window", window.toSeconds());
		Report.result(what + ", " + OURS, ours.format(), load);
		Report.result("  " + PEER, theirs.format(), peerLoad);
		boolean statements = ours.statements() >= 0 && theirs.statements() >= 0;
		Report.result(statements ? "  peer / ours, statements/s" : "  peer / ours, " + ours.unit() + ", means",
				String.format(Locale.ROOT, "%.2fx",
						statements ? theirs.statements() / ours.statements() : theirs.mean() / ours.mean()),
				load);
	}

	/**
	 * Prints a figure of ours, the peer's, and the ratio of their medians.
	 * @param what what was measured
	 * @param ours our samples, in milliseconds, with {@code null} or NaN for a round
	 * without the figure
	 * @param oursLoad the load average before ours
	 * @param peer the peer's samples, in milliseconds
	 * @param peerLoad the load average before the peer's
	 */
	private static void compare(String what, List<Double> ours, String oursLoad, List<Double> peer, String peerLoad) {
		Stats oursStats = Stats.of(ours.stream().filter(Objects::nonNull).filter((ms) -> !ms.isNaN()).toList());
		Stats peerStats = Stats.of(peer);
		Report.result(what + ", " + OURS, oursStats.format("ms"), oursLoad);
		Report.result("  " + PEER, peerStats.format("ms"), peerLoad);
		Report.result("  peer / ours, medians",
				String.format(Locale.ROOT, "%.2fx", peerStats.median() / oursStats.median()), oursLoad);
	}

	/**
	 * Times {@code SELECT 1} from the harness, each on a connection that idled 0.5 s, as
	 * {@link LeadershipTimings} times its reference.
	 * @param database the database
	 * @return the round trips, in milliseconds
	 */
	private static List<Double> floor(BenchDatabase database) throws Exception {
		List<Double> samples = new ArrayList<>();
		try (Connection connection = database.connect()) {
			for (int i = 0; i < FLOOR_SAMPLES; i++) {
				TimeUnit.MILLISECONDS.sleep(500);
				samples.add(LeadershipTimings.idleRoundTrip(connection));
			}
		}
		return samples;
	}

}
