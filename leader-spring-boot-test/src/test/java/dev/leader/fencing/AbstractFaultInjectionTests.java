package dev.leader.fencing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import dev.leader.lease.LeaseSettings;
import dev.leader.test.Cluster;
import dev.leader.test.DecisionLogChecks;
import dev.leader.test.FaultHistory;
import dev.leader.test.FaultHistory.Checks;
import dev.leader.test.FaultHistory.Episode;
import dev.leader.test.FaultHistory.FaultKind;
import dev.leader.test.FaultHistory.Incarnation;
import dev.leader.test.FaultHistory.Write;
import dev.leader.test.NodeEvent;
import dev.leader.test.NodeEvent.Type;
import dev.leader.test.NodeProcess;
import dev.leader.test.NodeProxies;
import dev.leader.test.StallingProxy;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Fault injection in the manner of Jepsen (guarantees G1 to G3, and G5 and G6 of the
 * design), written once for every database: three node processes make fenced writes to a
 * log table while they lead, each fenced by an append to the group's decision log in the
 * same transaction, and random faults hit them, mostly the leader: SIGSTOP and SIGCONT,
 * SIGKILL and a restart, the termination of their database sessions, and network stalls
 * through a {@link StallingProxy} each. While it leads, each node also runs guarded-write
 * load: {@value #LOAD_THREADS} threads of back-to-back transactions that guard the lease
 * and stay open for {@link #LOAD_HOLD}, so that the lease rows are share-locked nearly
 * all the time, as under an application's load, and the leader's renewals must pass them.
 * One node runs with its wall clock five hours ahead under libfaketime, with the
 * monotonic clock left alone. At the end {@link FaultHistory.Checks} checks the history
 * and the tables, including that terms changed only when a fault hit the leader, and
 * {@link DecisionLogChecks} the decision logs: no gap, no entry of an old term after a
 * newer one, and exactly the committed writes.
 * <p>
 * A subclass gives the cluster on its database, and how many episodes the normal suite
 * runs; {@code -Dfault.episodes=N} makes a long run and {@code -Dfault.seed=N} repeats a
 * run's choices. Every run prints a summary line and writes it to
 * {@code target/<summary file>}.
 */
abstract class AbstractFaultInjectionTests {

	/**
	 * The timings of {@code MultiProcessLeadershipTests}: the margin is wider than clock
	 * drift needs, because the checkers compare the times at which nodes print their
	 * events.
	 */
	static final LeaseSettings FAST = new LeaseSettings(Duration.ofSeconds(2), Duration.ofMillis(500),
			Duration.ofMillis(500), Duration.ofMillis(300), Duration.ofSeconds(2), Duration.ofSeconds(3));

	static final String ALPHA = "alpha";

	static final String BETA = "beta";

	private static final List<String> GROUPS = List.of(ALPHA, BETA);

	private static final List<String> NODES = List.of("node-a", "node-b", "node-c");

	private static final String FAKED_NODE = "node-c";

	private static final Path LIBFAKETIME = Path.of("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1");

	private static final Duration FAKED_OFFSET = Duration.ofHours(5);

	private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(20);

	private static final Duration HEALTHY_TIMEOUT = Duration.ofSeconds(15);

	private static final Duration WRITE_RESUME_BOUND = Duration.ofSeconds(2);

	private static final int LOAD_THREADS = 4;

	private static final Duration LOAD_HOLD = Duration.ofMillis(100);

	@RegisterExtension
	final Cluster cluster;

	@RegisterExtension
	final NodeProxies proxies;

	private final int poolSizeWithoutLoad;

	private final int defaultEpisodes;

	private final String summaryFile;

	private final FaultHistory history = new FaultHistory(FAST, GROUPS, WRITE_RESUME_BOUND);

	private final Map<String, Incarnation> current = new ConcurrentHashMap<>();

	private final AtomicLong incarnations = new AtomicLong();

	/**
	 * Creates the run.
	 * @param cluster the cluster on the database under test, of test nodes with the lease
	 * settings {@link #FAST} and the groups {@code alpha} and {@code beta}
	 * @param poolSizeWithoutLoad the connections a node needs besides its load, so that
	 * the load never makes the engine or the writer wait for the pool
	 * @param defaultEpisodes the episodes of a run without {@code -Dfault.episodes}
	 * @param summaryFile the file in {@code target} that keeps the run's summary
	 */
	AbstractFaultInjectionTests(Cluster cluster, int poolSizeWithoutLoad, int defaultEpisodes, String summaryFile) {
		this.cluster = cluster;
		this.proxies = new NodeProxies(cluster::url);
		this.poolSizeWithoutLoad = poolSizeWithoutLoad;
		this.defaultEpisodes = defaultEpisodes;
		this.summaryFile = summaryFile;
	}

	@Test
	void randomFaultsNeverLetAStaleWriteCommitAndLeadershipAlwaysComesBack() throws IOException {
		long seed = Long.getLong("fault.seed", System.nanoTime());
		int episodes = Integer.getInteger("fault.episodes", this.defaultEpisodes);
		SplittableRandom random = new SplittableRandom(seed);
		System.out.printf("Fault run: seed=%d episodes=%d (repeat with -Dfault.seed=%d)%n", seed, episodes, seed);
		long began = System.nanoTime();
		FaultHistory.setOrigin(began);
		FaultHistory.createLogTable(this.cluster.dataSource());
		// The node with the faked clock starts alone, so that it is elected and has to
		// renew: it must behave like any.
		NodeProcess faked = startNode(FAKED_NODE).process();
		faked.awaitReady(STARTUP_TIMEOUT);
		GROUPS.forEach((group) -> assertThat(this.cluster.awaitSingleLeader(group, STARTUP_TIMEOUT)).isSameAs(faked));
		await("the node with the faked clock keeps leading by renewing").during(FAST.duration().multipliedBy(2))
			.atMost(FAST.duration().multipliedBy(3))
			.until(() -> GROUPS.stream().allMatch(faked::isLeader));
		NODES.stream().filter((node) -> !node.equals(FAKED_NODE)).forEach(this::startNode);
		this.current.values().forEach((incarnation) -> incarnation.process().awaitReady(STARTUP_TIMEOUT));
		for (int number = 1; number <= episodes; number++) {
			awaitHealthy("before episode " + number, seed);
			this.history.add(injectRandomFault(number, random));
		}
		awaitHealthy("after the last episode", seed);
		Checks checks = checkAfterGracefulStop();
		String summary = checks.summary(seed, Duration.ofNanos(System.nanoTime() - began));
		System.out.println(summary);
		FaultHistory.keepSummary(this.summaryFile, summary);
		assertThat(checks.violations()).as("violations of run with seed %d (%s)", seed, summary).isEmpty();
		assertThat(this.history.episodes()).hasSize(episodes);
		assertThat(checks.failovers()).as("failovers measured").isNotEmpty();
	}

	@Test
	void pausedOldLeaderResumesAndItsFencedWriteIsRejectedWhileTheNewLeaderWritesAreIntact() {
		FaultHistory.setOrigin(System.nanoTime());
		FaultHistory.createLogTable(this.cluster.dataSource());
		NODES.forEach(this::startNode);
		this.current.values().forEach((incarnation) -> incarnation.process().awaitReady(STARTUP_TIMEOUT));
		NodeProcess old = this.cluster.awaitSingleLeader(ALPHA, STARTUP_TIMEOUT);
		Incarnation oldIncarnation = this.current.get(old.nodeId());
		long oldTerm = old.lastEvent((event) -> event.is(Type.GRANTED, ALPHA)).orElseThrow().term();
		await().atMost(Duration.ofSeconds(5)).until(() -> writesOf(ALPHA, oldTerm).size() >= 3);
		Map<String, Long> held = heldTerms(old);
		long stoppedAt = System.nanoTime();
		old.sigstop();
		long resuming;
		NodeEvent takeover;
		try {
			takeover = this.cluster.awaitGrant(ALPHA, oldTerm, FAST.duration().plusSeconds(2));
			await().atMost(Duration.ofSeconds(5)).until(() -> writesOf(ALPHA, takeover.term()).size() >= 5);
		}
		finally {
			// The node runs again as soon as the signal is delivered, before the kill
			// command has returned.
			resuming = System.nanoTime();
			old.sigcont();
		}
		long resumedAt = System.nanoTime();
		oldIncarnation.frozen(stoppedAt, resumedAt);
		this.history.add(new Episode(1, FaultKind.PAUSE, old.nodeId(), held, stoppedAt, resumedAt,
				"pause " + (resumedAt - stoppedAt) / 1_000_000 + " ms"));
		NodeEvent rejected = old.awaitEvent("REJECTED " + ALPHA + " " + oldTerm,
				(event) -> event.is(Type.REJECTED, ALPHA) && event.term() == oldTerm, Duration.ofSeconds(5));
		assertThat(rejected.nanoTime()).isGreaterThan(resuming);
		old.awaitEvent("REVOKED " + ALPHA + " " + oldTerm,
				(event) -> event.is(Type.REVOKED, ALPHA) && event.term() == oldTerm, Duration.ofSeconds(5));
		List<Write> newWrites = writesOf(ALPHA, takeover.term());
		await("the new leader writes on after the old one resumed").atMost(Duration.ofSeconds(5))
			.until(() -> writesOf(ALPHA, takeover.term()).stream()
				.anyMatch((write) -> write.stampNanos() > rejected.nanoTime()));
		assertThat(writesOf(ALPHA, takeover.term())).as("the new leader's writes")
			.containsAll(newWrites)
			.allMatch((write) -> write.node().equals(takeover.node()));
		assertThat(writesOf(ALPHA, oldTerm)).as("the old leader's writes")
			.isNotEmpty()
			.allMatch((write) -> write.node().equals(old.nodeId()))
			.allMatch((write) -> write.stampNanos() < takeover.nanoTime());
		Checks checks = checkAfterGracefulStop();
		assertThat(checks.violations()).isEmpty();
	}

	private Incarnation startNode(String nodeId) {
		long number = this.incarnations.incrementAndGet();
		List<String> arguments = List.of("--url=" + this.proxies.url(nodeId), "--writer=true", "--writer-fence=log",
				"--incarnation=" + number, "--load-threads=" + LOAD_THREADS, "--load-hold=" + LOAD_HOLD,
				"--pool-size=" + (this.poolSizeWithoutLoad + LOAD_THREADS));
		Map<String, String> environment = nodeId.equals(FAKED_NODE) ? fakedClock() : Map.of();
		Incarnation incarnation = this.history.started(number, this.cluster.start(nodeId, arguments, environment));
		this.current.put(nodeId, incarnation);
		return incarnation;
	}

	private Episode injectRandomFault(int number, SplittableRandom random) {
		String group = GROUPS.get(random.nextInt(GROUPS.size()));
		List<NodeProcess> leaders = this.cluster.leaders(group);
		String target = (random.nextDouble() < 0.75 && leaders.size() == 1) ? leaders.get(0).nodeId()
				: NODES.get(random.nextInt(NODES.size()));
		FaultKind kind = FaultKind.pick(random);
		Duration duration = FAST.duration().multipliedBy(switch (kind) {
			case PAUSE -> 500 + random.nextInt(2501);
			case STALL -> 250 + random.nextInt(1251);
			case KILL, TERMINATE -> 0;
		}).dividedBy(1000);
		// The fault's timing: a random offset within the renew interval, so faults hit
		// every phase of the renewals.
		FaultHistory.sleepAsFault(Duration.ofMillis(random.nextInt((int) FAST.renewInterval().toMillis())));
		Incarnation incarnation = this.current.get(target);
		NodeProcess process = incarnation.process();
		Map<String, Long> held = heldTerms(process);
		long startedAt = System.nanoTime();
		long liftedAt;
		switch (kind) {
			case PAUSE -> liftedAt = incarnation.pause(startedAt, duration);
			case KILL -> {
				incarnation.kill(startedAt);
				liftedAt = startedAt;
				startNode(target).process().awaitReady(STARTUP_TIMEOUT);
			}
			case TERMINATE -> {
				int terminated = this.cluster.terminateSessions(target);
				liftedAt = System.nanoTime();
				return new Episode(number, kind, target, held, startedAt, liftedAt,
						terminated + " sessions terminated");
			}
			case STALL -> {
				liftedAt = this.history.stall(this.proxies.get(target), target, startedAt, duration);
			}
			default -> throw new IllegalStateException("Unknown fault " + kind);
		}
		String detail = switch (kind) {
			case PAUSE -> "frozen for " + duration.toMillis() + " ms";
			case STALL -> "stalled for " + duration.toMillis() + " ms";
			default -> "restarted";
		};
		return new Episode(number, kind, target, held, startedAt, liftedAt, detail);
	}

	/**
	 * Waits until every group has a single leader that the coordinator agrees with, and a
	 * write of every group has committed since.
	 */
	private void awaitHealthy(String when, long seed) {
		try {
			long from = System.nanoTime();
			GROUPS.forEach((group) -> this.cluster.awaitSingleLeader(group, HEALTHY_TIMEOUT));
			await().atMost(HEALTHY_TIMEOUT)
				.pollInterval(Duration.ofMillis(20))
				.until(() -> GROUPS.stream()
					.allMatch(
							(group) -> FaultHistory.latestStamp(this.cluster.dataSource(), group).orElse(Long.MIN_VALUE)
									- from > 0));
		}
		catch (AssertionError | ConditionTimeoutException ex) {
			List<Episode> episodes = this.history.episodes();
			throw new AssertionError("The cluster did not recover " + when + " (seed " + seed + "); last fault: "
					+ (episodes.isEmpty() ? "none" : episodes.get(episodes.size() - 1)), ex);
		}
	}

	/**
	 * Stops every running node gracefully, so that all their leaderships end, checks the
	 * wall clocks they printed, and runs the checkers.
	 */
	private Checks checkAfterGracefulStop() {
		this.history.stopGracefully(this.current.values());
		for (Incarnation incarnation : this.history.incarnations()) {
			assertWallClock(incarnation.process());
		}
		assertThat(DecisionLogChecks.violations(this.cluster.dataSource(), "fault_log"))
			.as("violations of the decision logs, whose appends fenced the writes")
			.isEmpty();
		assertThat(DecisionLogChecks.entries(this.cluster.dataSource())).as("decision log entries").isPositive();
		return this.history.check(FaultHistory.readWrites(this.cluster.dataSource()),
				FaultHistory.readLoad(this.cluster.dataSource()));
	}

	private void assertWallClock(NodeProcess process) {
		NodeEvent clock = process.firstEvent((event) -> event.type() == Type.CLOCK)
			.orElseThrow(() -> new AssertionError(process.nodeId() + " printed no CLOCK line\n" + process.describe()));
		long testWallAtThen = System.currentTimeMillis()
				- TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - clock.nanoTime());
		Duration offset = Duration.ofMillis(clock.term() - testWallAtThen);
		Duration expected = process.nodeId().equals(FAKED_NODE) ? FAKED_OFFSET : Duration.ZERO;
		assertThat(offset.minus(expected).abs())
			.as("wall clock offset of %s (pid %d) was %s, expected %s", process.nodeId(), process.pid(), offset,
					expected)
			.isLessThan(Duration.ofMinutes(1));
	}

	private Map<String, Long> heldTerms(NodeProcess process) {
		Map<String, Long> held = new LinkedHashMap<>();
		for (String group : GROUPS) {
			if (process.isLeader(group)) {
				held.put(group, process.lastEvent((event) -> event.is(Type.GRANTED, group)).orElseThrow().term());
			}
		}
		return held;
	}

	private List<Write> writesOf(String group, long term) {
		List<Write> writes = new ArrayList<>();
		for (Write write : FaultHistory.readWrites(this.cluster.dataSource())) {
			if (write.group().equals(group) && write.term() == term) {
				writes.add(write);
			}
		}
		return writes;
	}

	private static Map<String, String> fakedClock() {
		if (!Files.isReadable(LIBFAKETIME)) {
			throw new AssertionError("libfaketime is missing (" + LIBFAKETIME + "): the fault run needs Debian's "
					+ "faketime package for its node with a wall clock hours off. Install it with "
					+ "'apt-get install faketime'");
		}
		// The monotonic clock stays real: the engine's safe window runs on it. The
		// "monotonic fix", which libfaketime turns on by itself on recent glibc, makes
		// the JVM's timed waits return early: every scheduler thread then spins, and the
		// node burns a core and misses its renewals on a busy machine. Hence it is turned
		// off.
		return Map.of("LD_PRELOAD", LIBFAKETIME.toString(), "FAKETIME", "+" + FAKED_OFFSET.toHours() + "h",
				"FAKETIME_DONT_FAKE_MONOTONIC", "1", "FAKETIME_FORCE_MONOTONIC_FIX", "0");
	}

}
