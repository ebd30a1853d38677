package dev.leader.benchmarks;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import dev.leader.benchmarks.peer.PeerNode;

/**
 * Hand-over, crash failover and idle load of three nodes of the peer, Spring
 * Integration's JDBC leader election ({@link PeerNode}, each a Spring Boot JVM of its
 * own), with the library's defaults, in the sample app's database: the figures
 * {@link PeerBenchmarks} sets beside the sample app's.
 * <p>
 * Times are on the wall clock, which the harness and the nodes share: from
 * {@link Instant#now()} just before the harness signals the leader to the {@code PEER
 * granted} line of the successor.
 */
final class PeerTimings {

	private static final long TIMEOUT_SECONDS = 60;

	private final BenchDatabase database;

	private final SampleCluster cluster;

	PeerTimings(BenchDatabase database, Path logs) {
		this.database = database;
		this.cluster = new SampleCluster(logs, "peer-", (name, arguments, log) -> SampleAppNode.launch(name,
				command(database, name), database.password(), log));
	}

	/**
	 * Returns the command line of a peer node: the harness's own class path.
	 * @param database the database
	 * @param name the node's name, also its connections' name on the server
	 * @return the command
	 */
	private static List<String> command(BenchDatabase database, String name) {
		List<String> command = new ArrayList<>();
		command.add(ProcessHandle.current().info().command().orElseThrow());
		command.add("-Xmx256m");
		command.add("-XX:+UseSerialGC");
		command.add("-cp");
		command.add(System.getProperty("java.class.path"));
		command.add(PeerNode.class.getName());
		command.add("--spring.datasource.url=" + database.url());
		command.add("--spring.datasource.username=" + database.user());
		command.add(database.dialect().connectionNameArgument(name));
		return command;
	}

	/**
	 * SIGTERM to the leader, then a new node in its place, round after round.
	 * @param rounds how many hand-overs
	 * @param settle how long the cluster idles before each round, once it has a leader
	 * @return the signal to the successor's grant, and the signal to the leader's revoke,
	 * in milliseconds
	 */
	List<List<Double>> handOver(int rounds, Duration settle) throws Exception {
		List<Double> grants = new ArrayList<>();
		List<Double> revokes = new ArrayList<>();
		try {
			this.cluster.start(List.of());
			for (int i = 0; i < rounds; i++) {
				SampleAppNode leader = settledLeader(settle);
				Instant signal = Instant.now();
				leader.sigterm();
				grants.add(millis(signal, awaitGrant(leader, signal).at()));
				if (!leader.awaitExit(TIMEOUT_SECONDS)) {
					throw new IllegalStateException(leader.name() + " did not exit within 60 s of SIGTERM");
				}
				leader.firstEvent((event) -> event.step().equals("revoked") && !event.at().isBefore(signal))
					.ifPresent((revoked) -> revokes.add(millis(signal, revoked.at())));
				this.cluster.replace(leader, List.of());
			}
		}
		finally {
			this.cluster.close();
		}
		return List.of(grants, revokes);
	}

	/**
	 * kill -9 of the leader, then a new node in its place, round after round.
	 * @param rounds how many failovers
	 * @param settle how long the cluster idles before each round, once it has a leader
	 * @return the kill to the successor's grant, and that grant after the dead lock's
	 * {@code EXPIRED_AFTER}, in milliseconds
	 */
	List<List<Double>> failover(int rounds, Duration settle) throws Exception {
		List<Double> grants = new ArrayList<>();
		List<Double> afterExpiry = new ArrayList<>();
		try (Connection connection = this.database.connect()) {
			this.cluster.start(List.of());
			for (int i = 0; i < rounds; i++) {
				SampleAppNode leader = settledLeader(settle);
				Instant signal = Instant.now();
				leader.kill();
				if (!leader.awaitExit(TIMEOUT_SECONDS)) {
					throw new IllegalStateException(leader.name() + " did not exit within 60 s of SIGKILL");
				}
				// The dead leader's lock, which no one takes before it expires.
				Instant expiry = expiredAfter(connection);
				Instant grant = awaitGrant(leader, signal).at();
				grants.add(millis(signal, grant));
				afterExpiry.add(millis(expiry, grant));
				this.cluster.replace(leader, List.of());
			}
		}
		finally {
			this.cluster.close();
		}
		return List.of(grants, afterExpiry);
	}

	/**
	 * The database load of three idle peer nodes, one of them leading.
	 * @param warmUp how long to wait once the cluster has a leader, before measuring
	 * @param window the length of one measuring window
	 * @param windows how many windows
	 * @return the load
	 */
	LoadWindows idle(Duration warmUp, Duration window, int windows) throws Exception {
		try {
			this.cluster.start(List.of());
			awaitSettled();
			sleep(warmUp);
			return LoadWindows.measure(this.database, window, windows);
		}
		finally {
			this.cluster.close();
		}
	}

	/**
	 * Waits until the cluster has settled, lets it idle, and waits again: the leader a
	 * round's signal goes to.
	 * @param settle how long the cluster idles
	 * @return the leader
	 */
	private SampleAppNode settledLeader(Duration settle) throws InterruptedException {
		awaitSettled();
		sleep(settle);
		return awaitSettled();
	}

	/**
	 * Waits until three nodes run and exactly one of them leads.
	 * @return the leader
	 */
	private SampleAppNode awaitSettled() throws InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
		while (true) {
			List<SampleAppNode> leaders = this.cluster.nodes().stream().filter(SampleAppNode::leads).toList();
			if (this.cluster.size() == 3 && leaders.size() == 1) {
				return leaders.get(0);
			}
			if (System.nanoTime() - deadline > 0) {
				throw new IllegalStateException("The peer nodes did not settle within 120 s: " + leaders.size()
						+ " leaders of " + this.cluster.size() + " nodes");
			}
			TimeUnit.MILLISECONDS.sleep(250);
		}
	}

	/**
	 * Waits for another node's grant after the signal; looks every 10 ms.
	 * @param leader the signalled leader
	 * @param signal when the harness signalled it
	 * @return the grant
	 */
	private SampleAppNode.WallEvent awaitGrant(SampleAppNode leader, Instant signal) throws InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_SECONDS);
		while (true) {
			for (SampleAppNode node : this.cluster.nodes()) {
				if (node == leader) {
					continue;
				}
				Optional<SampleAppNode.WallEvent> grant = node
					.firstEvent((event) -> event.step().equals("granted") && event.at().isAfter(signal));
				if (grant.isPresent()) {
					return grant.get();
				}
			}
			if (System.nanoTime() - deadline > 0) {
				throw new IllegalStateException("No peer node took over within 60 s of " + leader.name() + "'s signal");
			}
			TimeUnit.MILLISECONDS.sleep(10);
		}
	}

	private static Instant expiredAfter(Connection connection) throws SQLException {
		try (Statement statement = connection.createStatement();
				ResultSet row = statement.executeQuery("SELECT EXPIRED_AFTER FROM INT_LOCK")) {
			if (!row.next()) {
				throw new IllegalStateException("The dead peer leader's lock is gone");
			}
			// DefaultLockRepository writes the node's wall clock in UTC.
			return row.getObject(1, LocalDateTime.class).toInstant(ZoneOffset.UTC);
		}
	}

	private static double millis(Instant from, Instant to) {
		return ChronoUnit.MICROS.between(from, to) / 1e3;
	}

	/**
	 * Lets the cluster idle; a pause in the benchmark's schedule, never a
	 * synchronisation.
	 * @param duration how long to pause
	 */
	private static void sleep(Duration duration) throws InterruptedException {
		TimeUnit.NANOSECONDS.sleep(duration.toNanos());
	}

}
