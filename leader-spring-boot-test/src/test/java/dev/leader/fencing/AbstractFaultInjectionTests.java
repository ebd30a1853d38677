package dev.leader.fencing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import dev.leader.lease.LeaseSettings;
import dev.leader.test.Cluster;
import dev.leader.test.ConnectorJ;
import dev.leader.test.DaemonFaultChecks;
import dev.leader.test.DaemonTestNode;
import dev.leader.test.DecisionLogChecks;
import dev.leader.test.FaultHistory;
import dev.leader.test.FaultHistory.Checks;
import dev.leader.test.FaultHistory.Episode;
import dev.leader.test.FaultHistory.FaultKind;
import dev.leader.test.FaultHistory.Incarnation;
import dev.leader.test.FaultHistory.Paused;
import dev.leader.test.FaultHistory.Write;
import dev.leader.test.LogReadChecks;
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
 * Fault injection in the manner of Jepsen (guarantees G1 to G6 of the design) over a
 * configuration matrix, written once for every database: three node processes make fenced
 * writes to a log table while they lead, each fenced by an append to the group's decision
 * log in the same transaction; every node follows the decision logs and serves bookmark,
 * bounded-staleness and read-index reads, recording what each read saw
 * ({@code FollowedLog}); two daemons run on the nodes, their agents making fenced writes;
 * and random faults hit them, mostly the leader: SIGSTOP and SIGCONT, SIGKILL and a
 * restart, the termination of their database sessions by the server, and network stalls
 * through a {@link StallingProxy} each, and, every third episode, a server event of the
 * subclass's (a failover, a synchronous standby cut off, an immediate restart). While it
 * leads, each node also runs guarded-write load: {@value #LOAD_THREADS} threads of
 * back-to-back transactions that guard the lease and stay open for {@link #LOAD_HOLD}.
 * One node runs with its wall clock five hours ahead under libfaketime. The nodes bind
 * {@code alpha}'s lease to the holder's session (crash takeover,
 * {@code leader.lease.crash-takeover-groups}) and not {@code beta}'s, so that every fault
 * runs with it and without it.
 * <p>
 * The matrix: each episode runs in a {@link Cell cell}, the pool's isolation level and
 * auto-commit (as {@code spring.datasource.hikari.transaction-isolation} and
 * {@code auto-commit} set them) times the subclass's durability rows, taken round-robin
 * with the durability innermost, so that a run of as many episodes as there are cells
 * covers each once; the nodes restart with the next pool settings when they change.
 * <p>
 * At the end {@link FaultHistory.Checks} checks the history and the tables (G1: grants in
 * rising terms, no term granted twice; G3: no write or load transaction committed under a
 * stale term; terms changed only when a fault hit the leader or the server),
 * {@link DecisionLogChecks} the decision logs, {@link LogReadChecks} the followers
 * (applied sequences a prefix of the surviving log, bookmark reads containing their
 * entry, bounded reads within their bound) and {@link DaemonFaultChecks} the daemons'
 * writes (G4: no two generations of a daemon at once).
 * <p>
 * A subclass gives the cluster on its database, its durability rows and server events,
 * and how many episodes the normal suite runs; {@code -Dfault.episodes=N} makes a long
 * run and {@code -Dfault.seed=N} repeats a run's choices. Every run prints a summary line
 * and writes it to {@code target/<summary file>}.
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

	/**
	 * How many times the harness starts a node that exits before it is ready.
	 */
	private static final int STARTS = 3;

	/**
	 * How long past the failover bound the harness waits, after a kill, for the other
	 * nodes to take over before it starts the replacement anyway.
	 */
	private static final Duration RESTART_DELAY_MARGIN = Duration.ofSeconds(1);

	private static final Duration WRITE_RESUME_BOUND = Duration.ofSeconds(2);

	private static final int LOAD_THREADS = 4;

	private static final Duration LOAD_HOLD = Duration.ofMillis(100);

	private static final List<String> ISOLATIONS = List.of("READ_COMMITTED", "REPEATABLE_READ", "SERIALIZABLE");

	private static final List<String> DAEMONS = List.of("d1", "d2");

	/**
	 * Connections a node needs for its follower reads and its daemons besides the rest:
	 * the reader, an agent each, and the daemon coordinator's.
	 */
	private static final int POOL_SIZE_FOR_READS_AND_DAEMONS = 4;

	/**
	 * How long after a lossy failover's promotion a node may still serve reads from the
	 * entries it lost without reading the database: two renew intervals, in which a
	 * heartbeat reads the new log's heads, and the time to apply.
	 */
	private static final Duration DISCOVERY = FAST.renewInterval().multipliedBy(2).plusSeconds(1);

	@RegisterExtension
	final Cluster cluster;

	@RegisterExtension
	final NodeProxies proxies;

	/**
	 * The connection a follower keeps waiting for the session of {@code alpha}'s leader.
	 */
	private static final int CRASH_TAKEOVER_WAITERS = 1;

	private final int poolSizeWithoutLoad;

	private final int defaultEpisodes;

	private final String summaryFile;

	private final FaultHistory history = new FaultHistory(FAST, GROUPS, List.of(ALPHA), WRITE_RESUME_BOUND);

	private final Map<String, Incarnation> current = new ConcurrentHashMap<>();

	private final AtomicLong incarnations = new AtomicLong();

	private final Map<String, Integer> serverEventsByRow = new ConcurrentHashMap<>();

	private final Path reads;

	private volatile Cell cell;

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
		// Crash takeover on one group, so that every fault runs with and without it.
		this.cluster = cluster.withProperty("crash-takeover", ALPHA);
		this.proxies = new NodeProxies(cluster::url);
		this.poolSizeWithoutLoad = poolSizeWithoutLoad;
		this.defaultEpisodes = defaultEpisodes;
		this.summaryFile = summaryFile;
		this.reads = Path.of("target", "fault-reads", summaryFile.replace(".txt", ""));
		this.cell = cells().get(0);
	}

	/**
	 * Returns the durability rows of the server, the innermost dimension of the matrix.
	 * @return the rows' names, at least one
	 */
	abstract List<String> durabilityRows();

	/**
	 * Sets the server's durability to a row, while the nodes may run.
	 * @param row one of {@link #durabilityRows()}
	 */
	abstract void applyDurability(String row);

	/**
	 * Returns the server events that apply in a durability row.
	 * @param row one of {@link #durabilityRows()}
	 * @return the events, taken in turn
	 */
	abstract List<FaultKind> serverEvents(String row);

	/**
	 * Injects a server event and waits until the server is back.
	 * @param kind one of {@link #serverEvents}
	 * @param row the durability row in force
	 * @return when the event began and was lifted, and what it did
	 */
	abstract ServerEvent injectServerEvent(FaultKind kind, String row);

	/**
	 * Returns the cells in the order the episodes take them: the durability innermost, so
	 * that the nodes restart only every so many episodes.
	 */
	final List<Cell> cells() {
		List<Cell> cells = new ArrayList<>();
		for (String isolation : ISOLATIONS) {
			for (boolean autoCommit : List.of(true, false)) {
				for (String row : durabilityRows()) {
					cells.add(new Cell(isolation, autoCommit, row));
				}
			}
		}
		return cells;
	}

	@Test
	void randomFaultsNeverLetAStaleWriteCommitAndLeadershipAlwaysComesBack() throws IOException {
		long seed = Long.getLong("fault.seed", System.nanoTime());
		int episodes = Integer.getInteger("fault.episodes", this.defaultEpisodes);
		SplittableRandom random = new SplittableRandom(seed);
		System.out.printf("Fault run: seed=%d episodes=%d (repeat with -Dfault.seed=%d)%s%n", seed, episodes, seed,
				Boolean.getBoolean("fault.mysql-driver") ? ", MariaDB nodes through MySQL's driver" : "");
		long began = System.nanoTime();
		FaultHistory.setOrigin(began);
		FaultHistory.createLogTable(this.cluster.dataSource());
		DaemonTestNode.createWritesTable(this.cluster.dataSource());
		deleteReads();
		List<Cell> cells = cells();
		Map<Cell, Integer> episodesByCell = new LinkedHashMap<>();
		applyDurability(this.cell.durability());
		// The node with the faked clock starts alone, so that it is elected and has to
		// renew: it must behave like any.
		NodeProcess faked = awaitReady(startNode(FAKED_NODE)).process();
		GROUPS.forEach((group) -> assertThat(this.cluster.awaitSingleLeader(group, STARTUP_TIMEOUT)).isSameAs(faked));
		await("the node with the faked clock keeps leading by renewing").during(FAST.duration().multipliedBy(2))
			.atMost(FAST.duration().multipliedBy(3))
			.until(() -> GROUPS.stream().allMatch(faked::isLeader));
		NODES.stream().filter((node) -> !node.equals(FAKED_NODE)).forEach(this::startNode);
		List.copyOf(this.current.values()).forEach(this::awaitReady);
		for (int number = 1; number <= episodes; number++) {
			Cell next = cells.get((number - 1) % cells.size());
			if (!next.samePool(this.cell)) {
				awaitHealthy("before the nodes restart in cell " + next, seed);
				this.history.add(reconfigure(number, next));
			}
			if (!next.durability().equals(this.cell.durability())) {
				applyDurability(next.durability());
			}
			this.cell = next;
			episodesByCell.merge(next, 1, Integer::sum);
			awaitHealthy("before episode " + number + " in cell " + next, seed);
			// Every third episode a server event, on a durability row that turns with
			// each block of episodes, so that each row has its server events.
			int block = (number - 1) / 3;
			boolean serverEvent = (number - 1) % 3 == block % 3 && !serverEvents(next.durability()).isEmpty();
			this.history.add(serverEvent ? injectServerEvent(number, next) : injectRandomFault(number, random));
		}
		awaitHealthy("after the last episode", seed);
		Checks checks = checkAfterGracefulStop();
		LogReadChecks reads = new LogReadChecks(this.history, LogReadChecks.files(this.reads),
				this.cluster.dataSource(), FaultHistory.readWrites(this.cluster.dataSource()), DISCOVERY);
		DaemonFaultChecks daemons = new DaemonFaultChecks(this.history,
				DaemonFaultChecks.readWrites(this.cluster.dataSource()), null);
		String summary = checks.summary(seed, Duration.ofNanos(System.nanoTime() - began)) + " cells="
				+ episodesByCell.size() + "/" + cells.size() + " " + reads.summary() + " "
				+ daemons.exclusivitySummary();
		System.out.println(summary);
		System.out.println("Episodes by cell: " + episodesByCell);
		FaultHistory.keepSummary(this.summaryFile, summary);
		List<String> violations = new ArrayList<>(checks.violations());
		violations.addAll(reads.violations());
		violations.addAll(daemons.violations());
		assertThat(violations).as("violations of run with seed %d (%s)", seed, summary).isEmpty();
		assertThat(this.history.episodes().stream().filter((episode) -> episode.kind() != FaultKind.RECONFIGURE))
			.hasSize(episodes);
		assertThat(checks.failovers()).as("failovers measured").isNotEmpty();
	}

	@Test
	void pausedOldLeaderResumesAndItsFencedWriteIsRejectedWhileTheNewLeaderWritesAreIntact() {
		FaultHistory.setOrigin(System.nanoTime());
		FaultHistory.createLogTable(this.cluster.dataSource());
		DaemonTestNode.createWritesTable(this.cluster.dataSource());
		deleteReads();
		applyDurability(this.cell.durability());
		NODES.forEach(this::startNode);
		List.copyOf(this.current.values()).forEach(this::awaitReady);
		NodeProcess old = this.cluster.awaitSingleLeader(ALPHA, STARTUP_TIMEOUT);
		Incarnation oldIncarnation = this.current.get(old.nodeId());
		long oldTerm = old.lastEvent((event) -> event.is(Type.GRANTED, ALPHA)).orElseThrow().term();
		await().atMost(Duration.ofSeconds(5)).until(() -> writesOf(ALPHA, oldTerm).size() >= 3);
		Map<String, Long> held = heldTerms(old);
		Paused<NodeEvent> paused = oldIncarnation.pauseWhile(() -> {
			NodeEvent grant = this.cluster.awaitGrant(ALPHA, oldTerm, FAST.duration().plusSeconds(2));
			await().atMost(Duration.ofSeconds(5)).until(() -> writesOf(ALPHA, grant.term()).size() >= 5);
			return grant;
		});
		NodeEvent takeover = paused.result();
		this.history.add(paused.episode(1, held));
		NodeEvent rejected = old.awaitEvent("REJECTED " + ALPHA + " " + oldTerm,
				(event) -> event.is(Type.REJECTED, ALPHA) && event.term() == oldTerm, Duration.ofSeconds(5));
		assertThat(rejected.nanoTime()).isGreaterThan(paused.resuming());
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

	// -Dfault.mysql-driver=true runs MariaDB nodes through MySQL's driver (Connector/J).
	private String nodeUrl(String nodeId) {
		String url = this.proxies.url(nodeId);
		return Boolean.getBoolean("fault.mysql-driver") ? ConnectorJ.url(url) : url;
	}

	private Incarnation startNode(String nodeId) {
		long number = this.incarnations.incrementAndGet();
		Cell cell = this.cell;
		Map<String, String> properties = new LinkedHashMap<>();
		properties.put("url", nodeUrl(nodeId));
		properties.put("writer", "true");
		properties.put("writer-fence", "log");
		properties.put("incarnation", Long.toString(number));
		properties.put("load-threads", Integer.toString(LOAD_THREADS));
		properties.put("load-hold", LOAD_HOLD.toString());
		properties.put("pool-size", Integer.toString(
				this.poolSizeWithoutLoad + LOAD_THREADS + POOL_SIZE_FOR_READS_AND_DAEMONS + CRASH_TAKEOVER_WAITERS));
		properties.put("isolation", cell.isolation());
		properties.put("auto-commit", Boolean.toString(cell.autoCommit()));
		properties.put("follow", "true");
		properties.put("reads-file", this.reads.resolve(number + "-" + nodeId).toAbsolutePath().toString());
		properties.put("daemons", String.join(",", DAEMONS));
		properties.put("daemon-group", BETA);
		properties.put("ack-timeout", "PT2S");
		properties.put("drain-timeout", "PT2S");
		properties.put("settle", "PT1S");
		properties.put("initialization-fail-timeout", "PT10S");
		Map<String, String> environment = nodeId.equals(FAKED_NODE) ? fakedClock() : Map.of();
		Incarnation incarnation = this.history.started(number, this.cluster.start(nodeId, properties, environment));
		this.current.put(nodeId, incarnation);
		return incarnation;
	}

	/**
	 * Waits until the node started for an incarnation is ready. A node whose process
	 * exits before it prints {@code READY} is started again, up to {@value #STARTS} times
	 * in all: its pool's first connection can be ended while it is set up (a long run saw
	 * it right after a termination of the node's sessions), and HikariCP then fails at
	 * once, whatever its initialization-fail timeout. A node that is still running when
	 * the startup timeout passes fails the run.
	 * @param incarnation the incarnation just started
	 * @return the incarnation that is ready: the given one, or the one that replaced it
	 */
	private Incarnation awaitReady(Incarnation incarnation) {
		Incarnation starting = incarnation;
		for (int start = 1;; start++) {
			NodeProcess process = starting.process();
			try {
				process.awaitReady(STARTUP_TIMEOUT);
				return starting;
			}
			catch (AssertionError ex) {
				if (process.isAlive() || start == STARTS) {
					throw ex;
				}
				System.out.printf(
						"Node %s (incarnation %d, pid %d) exited before READY, start %d of %d; "
								+ "starting it again. %s%n",
						process.nodeId(), starting.number(), process.pid(), start, STARTS, ex.getMessage());
				starting = startNode(process.nodeId());
			}
		}
	}

	/**
	 * Waits, after a kill, until another live node leads every group that the killed node
	 * held, or until the failover bound and {@link #RESTART_DELAY_MARGIN} have passed
	 * since the kill; the checkers report a failover that took longer. The replacement
	 * starts only then, as a supervisor restarts a crashed process after a delay: a JVM
	 * starting takes the CPU that the surviving nodes need to take the lease over, and on
	 * two cores that alone made failovers miss the bound.
	 * @param groups the groups the killed node held
	 * @param killedAt a time no later than the kill
	 */
	private void awaitTakeover(Set<String> groups, long killedAt) {
		long deadline = killedAt + this.history.failoverBound().plus(RESTART_DELAY_MARGIN).toNanos();
		long left = deadline - System.nanoTime();
		if (groups.isEmpty() || left <= 0) {
			return;
		}
		try {
			await().atMost(Duration.ofNanos(left))
				.pollDelay(Duration.ZERO)
				.pollInterval(Duration.ofMillis(10))
				.until(() -> groups.stream().noneMatch((group) -> this.cluster.leaders(group).isEmpty()));
		}
		catch (ConditionTimeoutException ex) {
			// No takeover in time: a violation that the checkers report with its figures.
		}
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
			default -> 0;
		}).dividedBy(1000);
		// The fault's timing: a random offset within the renew interval, so faults hit
		// every phase of the renewals.
		FaultHistory.sleepAsFault(Duration.ofMillis(random.nextInt((int) FAST.renewInterval().toMillis())));
		Incarnation incarnation = this.current.get(target);
		NodeProcess process = incarnation.process();
		Map<String, Long> held = heldTerms(process);
		long startedAt = System.nanoTime();
		long liftedAt;
		long restartedAt = 0;
		switch (kind) {
			case PAUSE -> liftedAt = incarnation.pause(startedAt, duration);
			case KILL -> {
				incarnation.kill(startedAt);
				liftedAt = startedAt;
				awaitTakeover(held.keySet(), startedAt);
				restartedAt = System.nanoTime();
				awaitReady(startNode(target));
			}
			case TERMINATE -> {
				int terminated = this.cluster.terminateSessions(target);
				liftedAt = System.nanoTime();
				return new Episode(number, kind, target, held, startedAt, liftedAt,
						terminated + " sessions terminated");
			}
			case STALL -> {
				liftedAt = this.history.stall(this.proxies, target, startedAt, duration);
			}
			default -> throw new IllegalStateException("Unknown fault " + kind);
		}
		String detail = switch (kind) {
			case PAUSE -> "frozen for " + duration.toMillis() + " ms";
			case STALL -> "stalled for " + duration.toMillis() + " ms";
			default -> "restarted " + (restartedAt - startedAt) / 1_000_000 + " ms after the kill";
		};
		return new Episode(number, kind, target, held, startedAt, liftedAt, detail);
	}

	private Episode injectServerEvent(int number, Cell cell) {
		List<FaultKind> kinds = serverEvents(cell.durability());
		int turn = this.serverEventsByRow.merge(cell.durability(), 1, Integer::sum) - 1;
		FaultKind kind = kinds.get(turn % kinds.size());
		ServerEvent event = injectServerEvent(kind, cell.durability());
		return new Episode(number, kind, Episode.EVERY_NODE, Map.of(), event.startedAt(), event.liftedAt(),
				event.detail() + " in cell " + cell);
	}

	/**
	 * Stops every node gracefully and starts them again in the pool settings of the next
	 * cell.
	 */
	private Episode reconfigure(int number, Cell next) {
		long startedAt = System.nanoTime();
		List<NodeProcess> running = this.current.values()
			.stream()
			.map(Incarnation::process)
			.filter(NodeProcess::isAlive)
			.toList();
		running.forEach(NodeProcess::sigterm);
		running.forEach((process) -> process.awaitExit(Duration.ofSeconds(15)));
		this.cell = next;
		NODES.forEach(this::startNode);
		List.copyOf(this.current.values()).forEach(this::awaitReady);
		return new Episode(number, FaultKind.RECONFIGURE, Episode.EVERY_NODE, Map.of(), startedAt, System.nanoTime(),
				"restarted every node in cell " + next);
	}

	private void deleteReads() {
		try {
			if (Files.isDirectory(this.reads)) {
				try (var files = Files.list(this.reads)) {
					for (Path file : files.toList()) {
						Files.delete(file);
					}
				}
			}
			Files.createDirectories(this.reads);
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not clear " + this.reads, ex);
		}
	}

	/**
	 * Waits until every group has a single leader that the coordinator agrees with, and a
	 * write of every group has committed since.
	 */
	private void awaitHealthy(String when, long seed) {
		try {
			long from = System.nanoTime();
			GROUPS.forEach((group) -> this.cluster.awaitSingleLeader(group, HEALTHY_TIMEOUT));
			// A server event leaves the test's pool connections to a crashed server.
			await().atMost(HEALTHY_TIMEOUT)
				.ignoreExceptions()
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
			// A node prints its CLOCK line with READY: one that exited before, and was
			// started again (awaitReady), printed none.
			if (incarnation.process().firstEvent((event) -> event.type() == Type.READY).isPresent()) {
				assertWallClock(incarnation.process());
			}
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
		return FaultHistory.heldTerms(process, GROUPS);
	}

	private List<Write> writesOf(String group, long term) {
		return FaultHistory.readWrites(this.cluster.dataSource(), group, term);
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

	/**
	 * A server event as the subclass injected it.
	 *
	 * @param startedAt a time no later than the event began
	 * @param liftedAt a time no earlier than the server was back
	 * @param detail what was done; {@code lost} in it marks a failover that lost commits
	 */
	record ServerEvent(long startedAt, long liftedAt, String detail) {
	}

	/**
	 * A cell of the configuration matrix.
	 *
	 * @param isolation the pool's isolation level
	 * @param autoCommit the pool's auto-commit
	 * @param durability the server's durability row
	 */
	record Cell(String isolation, boolean autoCommit, String durability) {

		boolean samePool(Cell other) {
			return this.isolation.equals(other.isolation) && this.autoCommit == other.autoCommit;
		}

		@Override
		public String toString() {
			return this.isolation + "/auto-commit=" + this.autoCommit + "/" + this.durability;
		}

	}

}
