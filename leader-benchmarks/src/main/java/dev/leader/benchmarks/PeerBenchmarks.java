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
 * ours. Ours has two crash failovers: of {@code billing}, which the sample opts in to
 * crash takeover, and of {@code default}, which waits for its lease to expire. A
 * server-side kill of the sessions of {@code billing}'s leader, which lives on, has no
 * peer figure: it times the old leader's step-down, its successor's grant, and the window
 * in which both believed they led.
 */
final class PeerBenchmarks {

	private static final String OURS = "ours: sample app, defaults, 2 daemons, jobs paused";

	private static final String PEER = "peer: Spring Integration JdbcLockRegistry + LockRegistryLeaderInitiator, defaults";

	private static final int FLOOR_SAMPLES = 20;

	private PeerBenchmarks() {
	}

	/**
	 * Runs the comparison: {@code --peer-rounds=10} hand-overs of each,
	 * {@code --crash-rounds=20} kill -9 failovers of each (ours of {@code billing}'s
	 * leader), {@code --expiry-rounds=5} kill -9 failovers of {@code default}'s leader,
	 * {@code --session-kill-rounds=10} server-side kills of {@code billing}'s leader's
	 * sessions, {@code --app-settle=PT4S} before each round, the idle load over
	 * {@code --load-window} and {@code --load-windows}, once the machine is quiet
	 * ({@code --quiet-wait}). A count of 0 leaves that figure out.
	 * @param app the sample app's timings
	 * @param peer the peer's timings
	 * @param database the sample app's database, where both run
	 * @param options the command line's options
	 */
	static void run(SampleAppTimings app, PeerTimings peer, BenchDatabase database, BenchOptions options)
			throws Exception {
		int rounds = options.integer("peer-rounds", 10);
		int crashRounds = options.integer("crash-rounds", 20);
		int expiryRounds = options.integer("expiry-rounds", 5);
		int sessionKillRounds = options.integer("session-kill-rounds", 10);
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

		if (crashRounds > 0) {
			crashFailover(app, peer, crashRounds, expiryRounds, settle);
		}
		if (sessionKillRounds > 0) {
			sessionKill(app, sessionKillRounds, settle);
		}

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
	 * kill -9 of the leader: ours of {@code billing} (crash takeover), the peer's, and
	 * ours of {@code default} (lease expiry), each beside the peer's.
	 * @param app the sample app's timings
	 * @param peer the peer's timings
	 * @param rounds the failovers of {@code billing} and of the peer
	 * @param expiryRounds the failovers of {@code default}
	 * @param settle how long the cluster idles before each round
	 */
	private static void crashFailover(SampleAppTimings app, PeerTimings peer, int rounds, int expiryRounds,
			Duration settle) throws Exception {
		String load = Report.loadAverage();
		List<SampleAppTimings.Failover> takeovers = app.failover(List.of(), true, rounds, settle, "billing");
		String peerLoad = Report.loadAverage();
		List<List<Double>> peerFailovers = peer.failover(rounds, settle);
		compare("vs peer: crash takeover, kill -9 of billing's leader (leader.lease.crash-takeover-groups=billing) "
				+ "-> successor's granted event (3 nodes; peer lock TTL 10 s)",
				takeovers.stream().map(SampleAppTimings.Failover::grantEvent).toList(), load, peerFailovers.get(0),
				peerLoad);
		Report.result("  ours, kill -9 -> successor's acquired_at, database clock",
				Stats.of(takeovers.stream().map(SampleAppTimings.Failover::grant).toList()).format("ms"), load);
		Report.result("  ours, grant after the killed lease's expires_at, database clock (negative: before it)",
				Stats.of(takeovers.stream().map(SampleAppTimings.Failover::afterExpiry).toList()).format("ms"), load);
		Report.result("  peer, grant after the lock's EXPIRED_AFTER, the nodes' wall clock",
				Stats.of(peerFailovers.get(1)).format("ms"), peerLoad);
		if (expiryRounds > 0) {
			load = Report.loadAverage();
			List<SampleAppTimings.Failover> expiries = app.failover(List.of(), true, expiryRounds, settle, "default");
			compare("vs peer: failover without crash takeover, kill -9 of default's leader -> successor's granted "
					+ "event (3 nodes; ours lease 10 s, peer lock TTL 10 s)",
					expiries.stream().map(SampleAppTimings.Failover::grantEvent).toList(), load, peerFailovers.get(0),
					peerLoad);
			Report.result("  ours, grant after the lease's expires_at, database clock",
					Stats.of(expiries.stream().map(SampleAppTimings.Failover::afterExpiry).toList()).format("ms"),
					load);
		}
	}

	/**
	 * Server-side kills of the sessions of {@code billing}'s leader, which lives on: its
	 * step-down, the successor's grant, and the window in which both believed they led,
	 * from the kill statement, as the nodes printed them.
	 * @param app the sample app's timings
	 * @param rounds how many kills
	 * @param settle how long the cluster idles before each round
	 */
	private static void sessionKill(SampleAppTimings app, int rounds, Duration settle) throws Exception {
		String load = Report.loadAverage();
		List<SampleAppTimings.SessionLoss> losses = app.sessionKill(List.of(), true, rounds, settle);
		String how = (app.dialect() == Dialect.POSTGRESQL) ? "pg_terminate_backend" : "KILL CONNECTION";
		Report.result(
				"session kill: " + how + " on every session of billing's leader, which lives on -> its "
						+ "revoked event (3 nodes, ours only)",
				Stats.of(finite(losses.stream().map(SampleAppTimings.SessionLoss::revoke).toList())).format("ms"),
				load);
		Report.result("  kill -> successor's granted event",
				Stats.of(finite(losses.stream().map(SampleAppTimings.SessionLoss::grant).toList())).format("ms"), load);
		Report.result("  window in which both believed they led, max(0, revoke - grant)",
				Stats.of(finite(losses.stream().map(SampleAppTimings.SessionLoss::window).toList())).format("ms"),
				load);
		Report.result("  rounds: sessions ended, revoke reasons",
				losses.stream()
					.map((loss) -> loss.sessions() + " " + (loss.reason().isEmpty() ? "no revoke" : loss.reason())
							+ (loss.regained() ? " regained by the old leader" : ""))
					.toList()
					.toString(),
				load);
	}

	private static List<Double> finite(List<Double> samples) {
		return samples.stream().filter((ms) -> !ms.isNaN()).toList();
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
