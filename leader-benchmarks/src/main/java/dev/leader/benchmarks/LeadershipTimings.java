package dev.leader.benchmarks;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

import dev.leader.lease.LeaseSettings;
import dev.leader.test.NodeEvent;
import dev.leader.test.NodeEvent.Type;
import dev.leader.test.NodeProcess;
import dev.leader.test.TestNode;
import org.jspecify.annotations.Nullable;

import static org.awaitility.Awaitility.await;

/**
 * Hand-over and failover of one group among three node processes ({@code TestNode}: a
 * {@code LeaderEngine} on a Hikari pool, without a Spring context), measured on the
 * monotonic clock that every process of the machine shares: from the signal the benchmark
 * sends to the leader, to the {@code GRANTED} line that the successor prints from its
 * listener. After every round the stopped node is replaced by a fresh process, so every
 * hand-over is a node's first and only stop, as in production.
 */
final class LeadershipTimings {

	private static final String GROUP = "bench";

	private static final Duration TIMEOUT = Duration.ofSeconds(30);

	/**
	 * How long before the signal the reference round trip is made, so that the nodes idle
	 * again before the hand-over.
	 */
	private static final Duration REFERENCE_LEAD = Duration.ofSeconds(1);

	private final @Nullable BenchDatabase database;

	private final BenchNodes nodes;

	private final Function<LeaseSettings, BenchNodes.Launcher> launchers;

	private final Reset reset;

	LeadershipTimings(BenchDatabase database, Path logs) {
		this(database, logs, "node-", List.of());
	}

	/**
	 * Timings of {@code TestNode} processes on the benchmark's database.
	 * @param database the database, emptied before each cluster starts
	 * @param logs the directory of the nodes' logs
	 * @param prefix the prefix of the node ids
	 * @param extraArguments further arguments of every node, such as
	 * {@code --crash-takeover=bench}
	 */
	LeadershipTimings(BenchDatabase database, Path logs, String prefix, List<String> extraArguments) {
		this.database = database;
		this.nodes = new BenchNodes(logs, prefix);
		this.launchers = (settings) -> {
			List<String> arguments = new ArrayList<>(nodeArguments(database, settings));
			arguments.add("--groups=" + GROUP);
			arguments.addAll(extraArguments);
			return (nodeId, log) -> TestNode.start(nodeId, arguments, log);
		};
		this.reset = database::reset;
	}

	private LeadershipTimings(Path logs, String prefix, Function<LeaseSettings, BenchNodes.Launcher> launchers,
			Reset reset) {
		this.database = null;
		this.nodes = new BenchNodes(logs, prefix);
		this.launchers = launchers;
		this.reset = reset;
	}

	/**
	 * Timings of {@code TestNode} processes that coordinate through an etcd cluster
	 * ({@code --etcd}), the database being only their idle pool; each cluster of nodes
	 * starts on a key prefix of its own, so that nothing of an earlier one is left.
	 * @param database the benchmark's database, for the nodes' pools
	 * @param endpoints the client URLs of the etcd members
	 * @param logs the directory of the nodes' logs
	 * @param prefix the prefix of the node ids, and so of their log files
	 * @return the timings, without the database's reference round trips and lease reads
	 */
	static LeadershipTimings onEtcd(BenchDatabase database, List<String> endpoints, Path logs, String prefix) {
		AtomicInteger clusters = new AtomicInteger();
		AtomicReference<String> keys = new AtomicReference<>("");
		return new LeadershipTimings(logs, prefix, (settings) -> {
			List<String> arguments = new ArrayList<>(nodeArguments(database, settings));
			arguments.addAll(etcdArguments(endpoints, keys.get()));
			arguments.add("--groups=" + GROUP);
			return (nodeId, log) -> TestNode.start(nodeId, arguments, log);
		}, () -> keys.set("leader-bench/cluster-" + clusters.incrementAndGet() + "-" + System.nanoTime()));
	}

	/**
	 * The arguments that make a {@code TestNode} coordinate through etcd.
	 * @param endpoints the client URLs of the etcd members
	 * @param keys the prefix of the node's keys
	 * @return the arguments
	 */
	static List<String> etcdArguments(List<String> endpoints, String keys) {
		return List.of("--etcd=" + String.join(",", endpoints), "--etcd-prefix=" + keys);
	}

	/**
	 * SIGTERM to the leader until the successor's grant.
	 * @param settings the nodes' settings
	 * @param rounds how many hand-overs
	 * @param settle how long to let the cluster idle before each round
	 * @return the hand-over times, the times from the signal to the leader's printed
	 * revoke, from that revoke to the successor's grant, and the reference round trips
	 * (see {@link #idleRoundTrip}), in milliseconds
	 */
	List<List<Double>> handOver(LeaseSettings settings, int rounds, Duration settle) throws Exception {
		List<Double> samples = new ArrayList<>();
		List<Double> toRevoke = new ArrayList<>();
		List<Double> revokeToGrant = new ArrayList<>();
		List<Double> reference = new ArrayList<>();
		BenchDatabase database = this.database;
		try (Connection connection = (database != null) ? database.connect() : null) {
			startNodes(settings, 3);
			for (int round = 0; round < rounds; round++) {
				NodeProcess leader = awaitLeader();
				sleep(settle.minus(REFERENCE_LEAD));
				if (connection != null) {
					reference.add(idleRoundTrip(connection));
				}
				sleep(REFERENCE_LEAD);
				long term = grantedTerm(leader);
				long signalledAt = System.nanoTime();
				leader.sigterm();
				NodeEvent grant = awaitGrantAbove(term);
				samples.add((grant.nanoTime() - signalledAt) / 1e6);
				leader.awaitExit(TIMEOUT);
				// The leader prints its revoke once the revoke reached its listeners,
				// just before it releases.
				leader.lastEvent((event) -> event.is(Type.REVOKED, GROUP) && event.term() == term)
					.ifPresent((revoked) -> {
						toRevoke.add((revoked.nanoTime() - signalledAt) / 1e6);
						revokeToGrant.add((grant.nanoTime() - revoked.nanoTime()) / 1e6);
					});
				this.nodes.replace(leader, launcher(settings), TIMEOUT);
			}
		}
		finally {
			this.nodes.closeAll();
		}
		return List.of(samples, toRevoke, revokeToGrant, reference);
	}

	/**
	 * Times one {@code SELECT 1} from the harness on a connection that idled since the
	 * last round, as the nodes' connections did before a hand-over: the time a round trip
	 * takes on this machine at that moment, against which a hand-over can be read. The
	 * machine's speed changes over an hour, and this round trip with it.
	 * @param connection the harness's idle connection
	 * @return the round trip, in milliseconds
	 */
	static double idleRoundTrip(Connection connection) throws SQLException {
		long sent = System.nanoTime();
		try (Statement statement = connection.createStatement(); ResultSet row = statement.executeQuery("SELECT 1")) {
			row.next();
		}
		return (System.nanoTime() - sent) / 1e6;
	}

	/**
	 * kill -9 of the leader until the successor's grant, and the lag of that grant after
	 * the lease's expiry.
	 * @param settings the nodes' settings
	 * @param rounds how many failovers
	 * @param settle how long to let the cluster idle before each round
	 * @return the failover times, the lags after expiry on the database clock, and the
	 * lags after expiry of the printed grant, in milliseconds
	 */
	List<List<Double>> failover(LeaseSettings settings, int rounds, Duration settle) throws Exception {
		List<Double> failovers = new ArrayList<>();
		List<Double> databaseLags = new ArrayList<>();
		List<Double> grantLags = new ArrayList<>();
		try {
			startNodes(settings, 3);
			for (int round = 0; round < rounds; round++) {
				NodeProcess leader = awaitLeader();
				sleep(settle);
				long term = grantedTerm(leader);
				long killedAt = System.nanoTime();
				leader.kill9();
				Lease dead = readLease();
				if (dead.term() != term) {
					throw new IllegalStateException("Lease moved on before it expired: " + dead + ", term " + term);
				}
				NodeEvent grant = awaitGrantAbove(term);
				Lease taken = readLease();
				failovers.add((grant.nanoTime() - killedAt) / 1e6);
				databaseLags.add(ChronoUnit.MICROS.between(dead.expiresAt(), taken.acquiredAt()) / 1e3);
				long expiresAtNanos = dead.readAt() - ChronoUnit.NANOS.between(dead.expiresAt(), dead.databaseNow());
				grantLags.add((grant.nanoTime() - expiresAtNanos) / 1e6);
				this.nodes.replace(leader, launcher(settings), TIMEOUT);
			}
		}
		finally {
			this.nodes.closeAll();
		}
		return List.of(failovers, databaseLags, grantLags);
	}

	/**
	 * kill -9 of the leader until the successor's grant, on the monotonic clock alone:
	 * for a crash takeover on PostgreSQL (the lease bound to the holder's session) and
	 * for the lease expiry on etcd, where there is no lease row to read.
	 * @param settings the nodes' settings
	 * @param rounds how many kills
	 * @param settle how long to let the cluster idle before each round
	 * @return the times from the kill to the successor's grant, in milliseconds
	 */
	List<Double> killToGrant(LeaseSettings settings, int rounds, Duration settle) throws Exception {
		List<Double> samples = new ArrayList<>();
		try {
			startNodes(settings, 3);
			for (int round = 0; round < rounds; round++) {
				NodeProcess leader = awaitLeader();
				sleep(settle);
				long term = grantedTerm(leader);
				long killedAt = System.nanoTime();
				leader.kill9();
				NodeEvent grant = awaitGrantAbove(term);
				samples.add((grant.nanoTime() - killedAt) / 1e6);
				this.nodes.replace(leader, launcher(settings), TIMEOUT);
			}
		}
		finally {
			this.nodes.closeAll();
		}
		return samples;
	}

	private void startNodes(LeaseSettings settings, int count) throws Exception {
		this.reset.run();
		this.nodes.startAll(count, launcher(settings), TIMEOUT);
	}

	private BenchNodes.Launcher launcher(LeaseSettings settings) {
		return this.launchers.apply(settings);
	}

	static List<String> nodeArguments(BenchDatabase database, LeaseSettings settings) {
		return List.of("--url=" + database.url(), "--user=" + database.user(), "--password=" + database.password(),
				"--lease=" + settings.duration(), "--renew=" + settings.renewInterval(),
				"--retry=" + settings.retryInterval(), "--margin=" + settings.safetyMargin(),
				"--node-expiry=" + settings.nodeExpiry(), "--yield-cooldown=" + settings.yieldCooldown());
	}

	private NodeProcess awaitLeader() {
		return await().atMost(TIMEOUT)
			.pollInterval(Duration.ofMillis(10))
			.until(() -> this.nodes.all().stream().filter((node) -> node.isLeader(GROUP)).toList(),
					(leaders) -> leaders.size() == 1)
			.get(0);
	}

	/**
	 * Waits for the first grant of a later term. The grant's time is the one its node
	 * printed, so the poll only needs to find it, and it polls seldom enough not to take
	 * the cores from the nodes it measures.
	 * @param term the term that the grant must be above
	 * @return the earliest such grant of any node
	 */
	private NodeEvent awaitGrantAbove(long term) {
		return await().atMost(TIMEOUT)
			.pollDelay(Duration.ZERO)
			.pollInterval(Duration.ofMillis(10))
			.until(() -> this.nodes.all()
				.stream()
				.flatMap((node) -> node.firstEvent((event) -> event.is(Type.GRANTED, GROUP) && event.term() > term)
					.stream())
				.min(Comparator.comparingLong(NodeEvent::nanoTime)), Optional::isPresent)
			.orElseThrow();
	}

	private static long grantedTerm(NodeProcess leader) {
		return leader.lastEvent((event) -> event.is(Type.GRANTED, GROUP)).orElseThrow().term();
	}

	private Lease readLease() throws SQLException {
		BenchDatabase database = this.database;
		if (database == null) {
			throw new IllegalStateException("Lease rows are read on a database, not on etcd");
		}
		try (Connection connection = database.connect();
				PreparedStatement statement = connection.prepareStatement("SELECT term, acquired_at, expires_at, "
						+ "clock_timestamp() FROM " + BenchDatabase.PREFIX.value() + "leases WHERE group_name = ?")) {
			statement.setString(1, GROUP);
			try (ResultSet row = statement.executeQuery()) {
				long readAt = System.nanoTime();
				row.next();
				return new Lease(row.getLong(1), row.getObject(2, OffsetDateTime.class),
						row.getObject(3, OffsetDateTime.class), row.getObject(4, OffsetDateTime.class), readAt);
			}
		}
	}

	/**
	 * Lets the cluster idle; a pause in the benchmark's schedule, never a
	 * synchronisation.
	 * @param duration how long to pause
	 */
	private static void sleep(Duration duration) throws InterruptedException {
		TimeUnit.NANOSECONDS.sleep(duration.toNanos());
	}

	/**
	 * Empties the store before a cluster starts.
	 */
	@FunctionalInterface
	private interface Reset {

		void run() throws Exception;

	}

	private record Lease(long term, OffsetDateTime acquiredAt, OffsetDateTime expiresAt, OffsetDateTime databaseNow,
			long readAt) {
	}

}
