package dev.leader.fencing;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import dev.leader.lease.LeaseSettings;
import dev.leader.test.Cluster;
import dev.leader.test.DaemonFaultChecks;
import dev.leader.test.DaemonTestNode;
import dev.leader.test.FaultHistory;
import dev.leader.test.FaultHistory.Episode;
import dev.leader.test.FaultHistory.FaultKind;
import dev.leader.test.FaultHistory.Incarnation;
import dev.leader.test.NodeProxies;
import dev.leader.test.StallingProxy;
import dev.leader.test.TestNode;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.RowCallbackHandler;
import org.springframework.jdbc.core.simple.JdbcClient;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Fault injection for daemon assignment (G4 and G5 of the design), in the manner of
 * {@link FaultInjectionTests}: three {@link DaemonTestNode} processes run four daemons
 * whose agents make fenced writes in a loop (the guard of their {@code DaemonContext},
 * then a row of daemon, generation, node, incarnation and stamp), and random faults hit
 * the nodes that run daemons, the daemons group's leader more often than the others:
 * SIGSTOP for 0.5 to 3 times the node expiry and SIGCONT, SIGKILL and a restart,
 * {@code pg_terminate_backend} of their sessions, and network stalls through a
 * {@link StallingProxy} each. At the end, with every node stopped gracefully,
 * {@link DaemonFaultChecks} checks the committed writes: no two generations of a daemon
 * commit at once, and every daemon of a node hit runs again within the node expiry plus a
 * few seconds.
 * <p>
 * A node frozen or stalled inside a guarded transaction would hold the leader's reclaim
 * of that daemon up for as long as it stays so, if the daemon guard did not bound the
 * transaction's idle time to the node expiry minus the safety margin; the reassignment
 * checker is what shows that bound works.
 * <p>
 * The normal suite runs a couple of dozen episodes. The long run is
 * {@code ./mvnw -pl leader-spring-boot-test -am verify -Dtest=DaemonFaultInjectionTests -Dsurefire.failIfNoSpecifiedTests=false -Dfault.episodes=500}
 * (with the {@code LEADER_TEST_JDBC_*} variables as for every test);
 * {@code -Dfault.seed=N} repeats a run's choices. Every run prints a summary line and
 * writes it to {@code target/daemon-fault-summary.txt}.
 */
class DaemonFaultInjectionTests {

	/**
	 * The timings of {@code MultiProcessDaemonTests}.
	 */
	private static final LeaseSettings FAST = new LeaseSettings(Duration.ofSeconds(2), Duration.ofMillis(500),
			Duration.ofMillis(500), Duration.ofMillis(300), Duration.ofSeconds(3), Duration.ofSeconds(3));

	private static final String DAEMON_GROUP = "default";

	private static final List<String> DAEMONS = List.of("d1", "d2", "d3", "d4");

	private static final List<String> NODES = List.of("node-a", "node-b", "node-c");

	private static final Duration ACK_TIMEOUT = Duration.ofSeconds(2);

	private static final Duration DRAIN_TIMEOUT = Duration.ofSeconds(2);

	private static final Duration SETTLE = Duration.ofSeconds(1);

	/**
	 * Short, so that a fault often catches an agent inside its guarded transaction.
	 */
	private static final Duration WRITE_INTERVAL = Duration.ofMillis(50);

	/**
	 * The node expiry, then a leader's cycle, an acknowledgement and the agent's first
	 * write, with room for a new leader of the daemons group and for the agent's restart
	 * backoff after a lost session.
	 */
	private static final Duration REASSIGNMENT_BOUND = FAST.nodeExpiry().plusSeconds(4);

	/**
	 * An agent's first restart back-off ({@code DaemonCoordinator}). Faults strike at
	 * least this long after every daemon has run again, so that an agent hit again has
	 * outlasted its back-off, which stays at this first step. An agent hit sooner would
	 * double it (with four faults in a row, to 8 s), and the reassignment bound allows
	 * for the first step only.
	 */
	private static final Duration FIRST_BACKOFF = Duration.ofSeconds(1);

	private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(20);

	private static final Duration HEALTHY_TIMEOUT = Duration.ofSeconds(20);

	private static final int DEFAULT_EPISODES = 20;

	/**
	 * The nodes also take part in a group of their own, as in
	 * {@code MultiProcessDaemonTests}.
	 */
	@RegisterExtension
	final Cluster cluster = TestNode.cluster(FAST, "aux");

	@RegisterExtension
	final NodeProxies proxies = new NodeProxies(this.cluster::url);

	private final FaultHistory history = new FaultHistory(FAST, List.of(), REASSIGNMENT_BOUND);

	private final Map<String, Incarnation> current = new ConcurrentHashMap<>();

	private final AtomicLong incarnations = new AtomicLong();

	@Test
	void randomFaultsNeverLetTwoGenerationsOfADaemonCommitAtOnceAndEveryDaemonRunsAgainWithinNodeExpiry()
			throws IOException {
		long seed = Long.getLong("fault.seed", System.nanoTime());
		int episodes = Integer.getInteger("fault.episodes", DEFAULT_EPISODES);
		SplittableRandom random = new SplittableRandom(seed);
		System.out.printf("Daemon fault run: seed=%d episodes=%d (repeat with -Dfault.seed=%d)%n", seed, episodes,
				seed);
		long began = System.nanoTime();
		FaultHistory.setOrigin(began);
		DaemonTestNode.createWritesTable(this.cluster.dataSource());
		NODES.forEach(this::startNode);
		this.current.values().forEach((incarnation) -> incarnation.process().awaitReady(STARTUP_TIMEOUT));
		for (int number = 1; number <= episodes; number++) {
			awaitHealthy("before episode " + number, seed);
			this.history.add(injectRandomFault(number, random));
		}
		awaitHealthy("after the last episode", seed);
		this.history.stopGracefully(this.current.values());
		DaemonFaultChecks checks = new DaemonFaultChecks(this.history,
				DaemonFaultChecks.readWrites(this.cluster.dataSource()), REASSIGNMENT_BOUND);
		String summary = checks.summary(seed, rejectedWrites(), Duration.ofNanos(System.nanoTime() - began));
		System.out.println(summary);
		System.out.println("Reassignment times (ms, in episode order): "
				+ checks.reassignments().stream().map((nanos) -> nanos / 1_000_000).toList());
		FaultHistory.keepSummary(summaryFile(), summary);
		assertThat(checks.violations()).as("violations of run with seed %d (%s)", seed, summary).isEmpty();
		assertThat(this.history.episodes()).hasSize(episodes);
		assertThat(checks.reassignments()).as("reassignments measured").isNotEmpty();
	}

	/**
	 * Returns whether the daemons group is a crash-takeover group, so that the nodes are
	 * bound to their sessions ({@link NodeSessionDaemonFaultInjectionTests}).
	 * @return whether the nodes are bound
	 */
	boolean nodeSessions() {
		return false;
	}

	String summaryFile() {
		return "daemon-fault-summary.txt";
	}

	private Incarnation startNode(String nodeId) {
		long number = this.incarnations.incrementAndGet();
		String url = this.proxies.url(nodeId);
		Map<String, String> properties = new LinkedHashMap<>(Map.of("url", url, "incarnation", Long.toString(number),
				"daemons", String.join(",", DAEMONS), "daemon-group", DAEMON_GROUP, "ack-timeout",
				ACK_TIMEOUT.toString(), "drain-timeout", DRAIN_TIMEOUT.toString(), "settle", SETTLE.toString(),
				"write-interval", WRITE_INTERVAL.toString()));
		if (nodeSessions()) {
			properties.put("crash-takeover", DAEMON_GROUP);
		}
		Incarnation incarnation = this.history.started(number,
				this.cluster.start(nodeId, DaemonTestNode.class, properties, Map.of()));
		this.current.put(nodeId, incarnation);
		return incarnation;
	}

	private Episode injectRandomFault(int number, SplittableRandom random) {
		List<String> running = new ArrayList<>(new TreeMap<>(liveAssignmentsByNode()).keySet());
		String leader = daemonLeader();
		String target = (random.nextDouble() < 0.5 && running.contains(leader)) ? leader
				: running.get(random.nextInt(running.size()));
		FaultKind kind = FaultKind.pick(random);
		Duration duration = switch (kind) {
			case PAUSE -> FAST.nodeExpiry().multipliedBy(500 + random.nextInt(2501)).dividedBy(1000);
			case STALL -> FAST.nodeExpiry().multipliedBy(250 + random.nextInt(1251)).dividedBy(1000);
			default -> Duration.ZERO;
		};
		// A random moment within a heartbeat, so that faults hit every phase of the
		// cycles and of the agents' writes, once every agent has run for longer than its
		// first restart back-off.
		FaultHistory.sleepAsFault(FIRST_BACKOFF.plusMillis(random.nextInt((int) FAST.renewInterval().toMillis())));
		Incarnation incarnation = this.current.get(target);
		Map<String, Long> ran = liveAssignmentsByNode().getOrDefault(target, Map.of());
		long startedAt = System.nanoTime();
		long liftedAt;
		String detail;
		switch (kind) {
			case PAUSE -> {
				liftedAt = incarnation.pause(startedAt, duration);
				detail = "frozen for " + duration.toMillis() + " ms";
			}
			case KILL -> {
				incarnation.kill(startedAt);
				liftedAt = startedAt;
				startNode(target).process().awaitReady(STARTUP_TIMEOUT);
				detail = "restarted";
			}
			case TERMINATE -> {
				detail = this.cluster.terminateSessions(target) + " sessions terminated";
				liftedAt = System.nanoTime();
			}
			case STALL -> {
				liftedAt = this.history.stall(this.proxies.get(target), target, startedAt, duration);
				detail = "stalled for " + duration.toMillis() + " ms";
			}
			default -> throw new IllegalStateException("Unknown fault " + kind);
		}
		detail += target.equals(leader) ? ", the daemons group's leader" : "";
		return new Episode(number, kind, target, ran, startedAt, liftedAt, detail);
	}

	/**
	 * Waits until every daemon is ACTIVE on a running node and has committed a write of
	 * that generation since.
	 */
	private void awaitHealthy(String when, long seed) {
		long from = System.nanoTime();
		try {
			await().atMost(HEALTHY_TIMEOUT).pollInterval(Duration.ofMillis(50)).until(() -> {
				List<Boolean> healthy = JdbcClient.create(this.cluster.dataSource())
					.sql("""
							SELECT a.state = 'ACTIVE' AND max(w.stamp_nanos) - ? > 0, a.node_id
							FROM leader_assignments a LEFT JOIN %s w
							  ON w.daemon = a.daemon_name AND w.generation = a.generation AND w.kind = 'W'
							GROUP BY a.daemon_name, a.state, a.node_id
							""".formatted(DaemonTestNode.WRITES_TABLE))
					.param(from)
					.query((row, i) -> row.getBoolean(1) && this.current.get(row.getString(2)).process().isAlive())
					.list();
				return healthy.size() == DAEMONS.size() && !healthy.contains(false);
			});
		}
		catch (ConditionTimeoutException ex) {
			List<Episode> episodes = this.history.episodes();
			throw new AssertionError("The daemons did not all run again " + when + " (seed " + seed + "); assignments "
					+ liveAssignmentsByNode() + "; last fault: "
					+ (episodes.isEmpty() ? "none" : episodes.get(episodes.size() - 1)), ex);
		}
	}

	/**
	 * Reads the daemons assigned to each node (not DELETED), with their generations.
	 */
	private Map<String, Map<String, Long>> liveAssignmentsByNode() {
		Map<String, Map<String, Long>> byNode = new TreeMap<>();
		JdbcClient.create(this.cluster.dataSource())
			.sql("SELECT node_id, daemon_name, generation FROM leader_assignments WHERE state <> 'DELETED'")
			.query((RowCallbackHandler) (row) -> byNode.computeIfAbsent(row.getString(1), (node) -> new TreeMap<>())
				.put(row.getString(2), row.getLong(3)));
		return byNode;
	}

	private String daemonLeader() {
		return JdbcClient.create(this.cluster.dataSource())
			.sql("SELECT holder FROM leader_leases WHERE group_name = ?")
			.param(DAEMON_GROUP)
			.query(String.class)
			.optional()
			.orElse("");
	}

	private long rejectedWrites() {
		return JdbcClient.create(this.cluster.dataSource())
			.sql("SELECT count(*) FROM %s WHERE kind = 'R'".formatted(DaemonTestNode.WRITES_TABLE))
			.query(Long.class)
			.single();
	}

}
