package dev.leader.fencing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leader.FencingToken;
import dev.leader.LeadershipGrantedEvent;
import dev.leader.StaleLeadershipException;
import dev.leader.actuate.LeadershipHealthIndicator;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.LeaderEngine;
import dev.leader.lease.LeaseSettings;
import dev.leader.node.NodeRegistration;
import dev.leader.postgres.PostgresCoordinationStore;
import dev.leader.postgres.PostgresDaemonStore;
import dev.leader.postgres.PostgresFencingStore;
import dev.leader.test.Cluster;
import dev.leader.test.FaultHistory;
import dev.leader.test.FaultHistory.Write;
import dev.leader.test.Grants;
import dev.leader.test.NodeEvent;
import dev.leader.test.NodeEvent.Type;
import dev.leader.test.NodeProcess;
import dev.leader.test.ReplicatedPostgres;
import dev.leader.test.ReplicatedPostgres.Promotion;
import dev.leader.test.TestNode;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.health.contributor.Status;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * PostgreSQL high availability with real servers: a primary and a streaming standby of
 * the test's own ({@link ReplicatedPostgres}), node processes on a multi-host URL with
 * {@code targetServerType=primary}, and real faults: {@code pg_ctl stop -m immediate} of
 * the primary and {@code pg_ctl promote} of the standby, with synchronous replication and
 * with an asynchronous standby that stopped streaming before the primary died (so that
 * the old primary's last grants and writes are lost); {@code pg_ctl stop} in fast and
 * immediate mode and a start; a synchronous primary cut off from its standby. Every test
 * with node processes checks that no term is granted twice, that the terms in the fenced
 * log table never go down in commit order, and that nothing commits under a term that
 * another node held, or after a higher term was granted; the restart test checks that no
 * term is granted twice, and one test checks each statement's epoch directly, on stores
 * without an engine.
 * <p>
 * Each failover prints its figures (promotion to a stable leader, promotion to the first
 * fenced write) and appends them to {@code target/failover-figures.txt}. The long run of
 * mixed failovers and restarts: <pre>
 * ./mvnw -pl leader-spring-boot-test -am verify -Dsurefire.failIfNoSpecifiedTests=false -Dha.episodes=40 \
 *   -Dtest=PostgresHighAvailabilityTests#failoversAndRestartsMixedNeverGrantATermTwiceNorLetAStaleWriteCommit
 * </pre>
 */
class PostgresHighAvailabilityTests {

	private static final LeaseSettings FAST = new LeaseSettings(Duration.ofSeconds(2), Duration.ofMillis(500),
			Duration.ofMillis(500), Duration.ofMillis(300), Duration.ofSeconds(2), Duration.ofSeconds(3));

	private static final String ALPHA = "alpha";

	private static final List<String> NODES = List.of("node-a", "node-b", "node-c");

	private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(30);

	private static final Duration RECOVERY_TIMEOUT = Duration.ofSeconds(30);

	private static final long EPOCH = 1L << 32;

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	// Ordered, so that the servers run before the cluster's schema is created and until
	// it is dropped.
	@RegisterExtension
	@Order(1)
	final ReplicatedPostgres servers = new ReplicatedPostgres();

	@RegisterExtension
	@Order(2)
	final Cluster cluster = TestNode.cluster(FAST, this.servers::createSchema, ALPHA);

	private final Map<String, NodeProcess> running = new LinkedHashMap<>();

	private final Map<NodeProcess, Long> incarnations = new HashMap<>();

	private final AtomicLong incarnationNumbers = new AtomicLong();

	private long origin;

	@Test
	void termsKeepRisingAndNodesFollowWhenAnAsynchronousStandbyThatStoppedStreamingIsPromoted() {
		NodeEvent first = startNodesAndAwaitTheFirstLeadersWrites(3);
		assertThat(first.term()).as("terms of a never-promoted server").isLessThan(EPOCH);
		advanceFence(new FencingToken(ALPHA, first.term()));
		this.servers.standby().orElseThrow().stopStreaming();
		// A grant on the primary alone: the leader is killed, and another node is granted
		// the next term.
		kill(this.running.get(first.node()));
		NodeEvent lost = this.cluster.awaitGrant(ALPHA, first.term(), FAST.duration().plusSeconds(3));
		awaitWrites(lost.term(), 3);
		advanceFence(new FencingToken(ALPHA, lost.term()));
		long highestBefore = highestGrantedTerm();
		Failover failover = measure("asynchronous, standby stopped streaming", this.servers.failover(), highestBefore);
		assertThat(failover.leader().term()).as("the first term after the promotion")
			.isGreaterThan(highestBefore)
			.isEqualTo(EPOCH + 1);
		assertThat(writesOf(lost.term())).as("the writes of the term granted on the old primary alone were lost")
			.isEmpty();
		// The fence follows: the token of the new epoch is taken, the lost term is
		// refused afterwards.
		advanceFence(new FencingToken(ALPHA, failover.leader().term()));
		assertThatExceptionOfType(StaleLeadershipException.class)
			.isThrownBy(() -> advanceFence(new FencingToken(ALPHA, lost.term())));
		checkHistory();
	}

	@Test
	void termsKeepRisingAndNodesFollowWhenASynchronousStandbyIsPromoted() {
		this.servers.replicateSynchronously(true);
		NodeEvent first = startNodesAndAwaitTheFirstLeadersWrites(5);
		List<Write> before = FaultHistory.readWrites(this.cluster.dataSource());
		long highestBefore = highestGrantedTerm();
		Failover failover = measure("synchronous", this.servers.failover(), highestBefore);
		assertThat(failover.leader().term()).isGreaterThan(highestBefore).isGreaterThan(EPOCH);
		assertThat(FaultHistory.readWrites(this.cluster.dataSource())).as("writes committed before the failover")
			.containsAll(before);
		checkHistory();
	}

	@Test
	void leaderOfASynchronousPrimaryCutOffFromItsStandbyStepsDownWithinItsSafeWindow() {
		this.servers.replicateSynchronously(true);
		NodeEvent first = startNodesAndAwaitTheFirstLeadersWrites(3);
		NodeProcess leader = this.running.get(first.node());
		long cut = System.nanoTime();
		this.servers.standby().orElseThrow().stopStreaming();
		// Commits now wait for a standby that is gone: the driver's query timeout cancels
		// a renewal's wait, and the renewal comes back with a warning that the node
		// counts as a failure (statement_timeout alone would not end the wait: it would
		// hang); either way the safe window closes.
		NodeEvent revoked = leader.awaitEvent("REVOKED " + ALPHA + " " + first.term(),
				(event) -> event.is(Type.REVOKED, ALPHA) && event.term() == first.term(),
				FAST.duration().plusSeconds(2));
		assertThat(Duration.ofNanos(revoked.nanoTime() - cut)).as("step-down after the cut")
			.isLessThan(FAST.duration().plus(FAST.renewInterval()).plusSeconds(1));
		assertThat(this.cluster.leaders(ALPHA)).as("leaders while commits cannot reach the standby").isEmpty();
		long highestBefore = highestGrantedTerm();
		Failover failover = measure("synchronous primary cut off from its standby", this.servers.failover(),
				highestBefore);
		assertThat(failover.leader().term()).isGreaterThan(EPOCH);
		checkHistory();
	}

	@Test
	void leadershipResumesWithoutARepeatedTermAfterFastAndImmediateRestartsAndHealthShowsTheOutage() {
		List<Long> grants = new CopyOnWriteArrayList<>();
		List<InProcessNode> nodes = List.of(new InProcessNode("restart-a", grants),
				new InProcessNode("restart-b", grants));
		try {
			nodes.forEach(InProcessNode::start);
			await().atMost(STARTUP_TIMEOUT).until(() -> leaders(nodes) == 1);
			for (String mode : List.of("fast", "immediate")) {
				long termBefore = grants.get(grants.size() - 1);
				this.servers.primary().stop(mode);
				try {
					await("every node's health DOWN while the server is stopped (" + mode + ")")
						.atMost(FAST.nodeExpiry().plusSeconds(3))
						.until(() -> nodes.stream().allMatch((node) -> node.health().equals(Status.DOWN)));
					await("no leader once the safe window closed").atMost(FAST.duration().plusSeconds(1))
						.until(() -> leaders(nodes) == 0);
					assertThat(nodes).allMatch((node) -> node.health().equals(Status.DOWN));
				}
				finally {
					this.servers.primary().startServer();
				}
				await("leadership and health back after the restart (" + mode + ")").atMost(RECOVERY_TIMEOUT)
					.until(() -> leaders(nodes) == 1
							&& nodes.stream().allMatch((node) -> node.health().equals(Status.UP)));
				assertThat(grants.get(grants.size() - 1)).as("term after the %s restart", mode)
					.isGreaterThan(termBefore);
			}
			assertThat(grants).as("every term granted").doesNotHaveDuplicates().isSorted();
		}
		finally {
			nodes.forEach(InProcessNode::close);
		}
	}

	@Test
	void leaseBoundToASessionOfTheOldPrimaryWaitsForItsExpiryAfterAPromotion() throws Exception {
		// Synchronous, so that the binding is on the standby when it is promoted.
		this.servers.replicateSynchronously(true);
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(this.cluster.url());
		config.setUsername("postgres");
		config.setMaximumPoolSize(4);
		config.setConnectionTimeout(1000);
		try (HikariDataSource dataSource = new HikariDataSource(config)) {
			PostgresCoordinationStore holder = new PostgresCoordinationStore(dataSource, PREFIX, Duration.ofSeconds(1));
			holder.crashTakeover(List.of(ALPHA), "default");
			Duration lease = Duration.ofMinutes(1);
			try (AutoCloseable listening = holder.listen((group, successor) -> {
			})) {
				long term = Grants.acquire(holder, ALPHA, "holder", lease).lease().term();
				await("the lease bound to the holder's session").atMost(Duration.ofSeconds(5))
					.until(() -> sessionPid(dataSource) != null);
				this.servers.failover();
				// The promoted server never had the holder's session, and pg_locks shows
				// no
				// lock of it: only the lease's expiry may free the lease. Its first round
				// trips fail until the pool has connections to it.
				PostgresCoordinationStore follower = new PostgresCoordinationStore(dataSource, PREFIX,
						Duration.ofSeconds(1));
				CoordinationStore.AcquireResult attempt = await().atMost(RECOVERY_TIMEOUT)
					.ignoreExceptionsInstanceOf(DataAccessException.class)
					.until(() -> Grants.acquire(follower, ALPHA, "follower", lease),
							(result) -> result.lease() != null);
				assertThat(attempt.granted()).as("takeover on the promoted server of %s", attempt.lease()).isFalse();
				assertThat(attempt.lease().holder()).isEqualTo("holder");
				assertThat(attempt.lease().term()).isEqualTo(term);
			}
		}
	}

	private static Long sessionPid(DataSource dataSource) throws Exception {
		try (Connection connection = dataSource.getConnection();
				PreparedStatement statement = connection
					.prepareStatement("SELECT session_pid FROM leader_leases WHERE group_name = ?")) {
			statement.setString(1, ALPHA);
			try (ResultSet rows = statement.executeQuery()) {
				if (!rows.next()) {
					return null;
				}
				long pid = rows.getLong(1);
				return rows.wasNull() ? null : pid;
			}
		}
	}

	@Test
	void everyStatementThatGrantsOrChecksATokenMovesToTheNewEpochAfterAPromotion() {
		// Synchronous, so that everything below is on the standby when it is promoted.
		this.servers.replicateSynchronously(true);
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(this.cluster.url());
		config.setUsername("postgres");
		config.setMaximumPoolSize(3);
		config.setConnectionTimeout(1000);
		try (HikariDataSource dataSource = new HikariDataSource(config)) {
			PostgresCoordinationStore leases = new PostgresCoordinationStore(dataSource, PREFIX, Duration.ofSeconds(1));
			PostgresDaemonStore daemons = new PostgresDaemonStore(dataSource, PREFIX, Duration.ofSeconds(1),
					Duration.ofSeconds(10));
			Fencing fencing = new Fencing(
					new PostgresFencingStore(dataSource, PREFIX, Duration.ofSeconds(1), Duration.ofSeconds(2)),
					"leader");
			TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
			NodeRegistration leader = new NodeRegistration("leader", "leader", "localhost", 1);
			Duration lease = Duration.ofMinutes(1);
			FencingToken old = new FencingToken(ALPHA, Grants.acquire(leases, ALPHA, leader, lease).lease().term());
			assertThat(old.term()).isEqualTo(1);
			assertThat(daemons.assign(old, "leader", "outbox", "leader", 0)).isEqualTo(1);
			assertThat(daemons.revoke(old, "leader", "outbox", 1)).isTrue();
			assertThat(daemons.release("leader", "outbox", 1)).isTrue();
			this.servers.failover();
			// The pool's connections died with the old primary; the first round trips
			// fail until it has new ones.
			CoordinationStore.Tick tick = await().atMost(RECOVERY_TIMEOUT)
				.ignoreExceptions()
				.until(() -> leases.tick(leader, Map.of(ALPHA, old.term()), List.of(ALPHA), lease, lease),
						(result) -> true);
			assertThat(tick.renewed()).as("renewed under the old epoch's term").isEmpty();
			assertThat(tick.leases().get(ALPHA).holder()).as("the lease, unexpired").isEqualTo("leader");
			assertThatExceptionOfType(StaleLeadershipException.class).as("a guard of the old epoch's term")
				.isThrownBy(() -> transactions.executeWithoutResult((status) -> fencing.guard(old)))
				.withMessageContaining("promotion");
			assertThat(daemons.assign(old, "leader", "outbox", "leader", 1)).as("an assignment under the old term")
				.isZero();
			FencingToken renewed = new FencingToken(ALPHA, Grants.acquire(leases, ALPHA, leader, lease).lease().term());
			assertThat(renewed.term()).as("the holder's term after acquiring again").isEqualTo(EPOCH + 1);
			assertThat(Grants.acquire(leases, "beta", leader, lease).lease().term()).as("a new group's first term")
				.isEqualTo(EPOCH + 1);
			transactions.executeWithoutResult((status) -> fencing.guard(renewed));
			assertThat(daemons.assign(renewed, "leader", "outbox", "leader", 1)).as("the next generation")
				.isEqualTo(EPOCH + 1);
			assertThat(leases.tick(leader, Map.of(ALPHA, renewed.term()), List.of(ALPHA), lease, lease).renewed())
				.containsKey(ALPHA);
			leases.disconnect();
		}
	}

	@Test
	void grantWhoseWaitForASynchronousStandbyIsCancelledFailsThoughThePrimaryCommittedIt() {
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(this.cluster.url());
		config.setUsername("postgres");
		config.setMaximumPoolSize(2);
		try (HikariDataSource dataSource = new HikariDataSource(config)) {
			PostgresCoordinationStore leases = new PostgresCoordinationStore(dataSource, PREFIX, Duration.ofSeconds(1));
			NodeRegistration leader = Grants.node("leader");
			leases.tick(leader, Map.of(), List.of(), Duration.ofMinutes(1), Duration.ofMinutes(1));
			this.servers.replicateSynchronously(true);
			this.servers.standby().orElseThrow().stopStreaming();
			// The driver's query timeout cancels the commit's wait for the standby after
			// a second, and PostgreSQL then reports the commit, which is on the primary
			// alone, with a warning.
			assertThatExceptionOfType(DataAccessException.class)
				.isThrownBy(() -> leases.acquire(ALPHA, leader, Duration.ofMinutes(1)))
				.withStackTraceContaining("canceling wait for synchronous replication");
			assertThat(this.cluster.lease(ALPHA)).as("the grant, committed on the primary alone")
				.hasValueSatisfying((lease) -> assertThat(lease.term()).isEqualTo(1));
			leases.disconnect();
		}
		finally {
			// Dropping the schema must not wait for the standby either.
			this.servers.replicateSynchronously(false);
		}
	}

	/**
	 * The fault run: failovers with synchronous replication and with an asynchronous
	 * standby that stopped streaming, and restarts in immediate and fast mode, in turn,
	 * with three node processes making fenced writes. The normal suite runs one round of
	 * the four; {@code -Dha.episodes=N} runs more.
	 */
	@Test
	void failoversAndRestartsMixedNeverGrantATermTwiceNorLetAStaleWriteCommit() {
		int episodes = Integer.getInteger("ha.episodes", 4);
		startNodes();
		long mark = this.origin;
		List<String> done = new ArrayList<>();
		for (int number = 0; number < episodes; number++) {
			awaitStableLeader(highestGrantedTerm() - 1, mark);
			awaitWritesSince(mark);
			String kind = switch (number % 4) {
				case 0 -> "failover, asynchronous, standby stopped streaming";
				case 1 -> "restart, immediate";
				case 2 -> "failover, synchronous";
				default -> "restart, fast";
			};
			long highestBefore = highestGrantedTerm();
			if (kind.startsWith("failover")) {
				boolean synchronous = kind.contains(", synchronous");
				if (this.servers.standby().isEmpty()) {
					this.servers.replaceStandby();
				}
				this.servers.replicateSynchronously(synchronous);
				if (!synchronous) {
					this.servers.standby().orElseThrow().stopStreaming();
					// The old primary grants a term and takes writes that the standby
					// will never have: its leader is killed and started again, so that
					// another node is granted the next term.
					NodeProcess leader = this.running.get(awaitStableLeader(highestBefore - 1, mark).node());
					kill(leader);
					startNode(leader.nodeId()).awaitReady(STARTUP_TIMEOUT);
					this.cluster.awaitGrant(ALPHA, highestBefore, FAST.duration().plusSeconds(3));
					awaitWritesSince(System.nanoTime());
					highestBefore = highestGrantedTerm();
				}
				Promotion promotion = this.servers.failover();
				mark = promotion.requested();
				Failover failover = measure(kind, promotion, highestBefore);
				assertThat(failover.leader().term()).isGreaterThan(highestBefore);
			}
			else {
				mark = this.servers.restart(kind.substring("restart, ".length()), FAST.duration());
			}
			done.add(kind);
		}
		awaitStableLeader(highestGrantedTerm() - 1, mark);
		awaitWritesSince(mark);
		String summary = checkHistory();
		System.out.println("HA fault run: episodes=" + done.size() + " " + summary);
	}

	private NodeEvent startNodesAndAwaitTheFirstLeadersWrites(int writes) {
		startNodes();
		NodeEvent first = awaitStableLeader(0, this.origin);
		awaitWrites(first.term(), writes);
		return first;
	}

	private void startNodes() {
		this.origin = System.nanoTime();
		FaultHistory.setOrigin(this.origin);
		FaultHistory.createLogTable(this.cluster.dataSource());
		NODES.forEach(this::startNode);
		this.running.values().forEach((node) -> node.awaitReady(STARTUP_TIMEOUT));
	}

	private NodeProcess startNode(String nodeId) {
		long number = this.incarnationNumbers.incrementAndGet();
		NodeProcess node = this.cluster.start(nodeId,
				Map.of("writer", "true", "incarnation", Long.toString(number), "connection-timeout", "PT1S"), Map.of());
		this.running.put(nodeId, node);
		this.incarnations.put(node, number);
		return node;
	}

	private void kill(NodeProcess node) {
		node.kill9();
		this.running.remove(node.nodeId());
	}

	/**
	 * Waits until one running node has been granted a term above the given one and still
	 * leads a lease duration later, with the coordinator agreeing; returns its grant.
	 */
	private NodeEvent awaitStableLeader(long termAbove, long since) {
		AtomicReference<NodeEvent> leader = new AtomicReference<>();
		try {
			await().atMost(RECOVERY_TIMEOUT).pollInterval(Duration.ofMillis(20)).ignoreExceptions().until(() -> {
				List<NodeProcess> leaders = this.cluster.leaders(ALPHA);
				if (leaders.size() != 1) {
					return false;
				}
				NodeEvent grant = leaders.get(0).lastEvent((event) -> event.is(Type.GRANTED, ALPHA)).orElseThrow();
				if (grant.term() <= termAbove || grant.nanoTime() - since < 0
						|| System.nanoTime() - grant.nanoTime() < FAST.duration().toNanos()) {
					return false;
				}
				boolean agreed = this.cluster.lease(ALPHA)
					.map((lease) -> lease.isHeld() && lease.term() == grant.term()
							&& grant.node().equals(lease.holder()))
					.orElse(false);
				leader.set(agreed ? grant : null);
				return agreed;
			});
		}
		catch (ConditionTimeoutException ex) {
			StringBuilder message = new StringBuilder("No stable leader of " + ALPHA + " with a term above " + termAbove
					+ " within " + RECOVERY_TIMEOUT + "\n");
			this.cluster.nodes().forEach((node) -> message.append(node.describe()));
			throw new AssertionError(message.toString(), ex);
		}
		return leader.get();
	}

	/**
	 * Measures a failover: from the promotion to the grant of the leader that then stays
	 * (a stable leader), and to the first fenced write that commits under a term of the
	 * new epoch.
	 */
	private Failover measure(String kind, Promotion promotion, long highestBefore) {
		long promoted = promotion.accepted();
		NodeEvent leader = awaitStableLeader(highestBefore, promotion.requested());
		long firstWrite = awaitWritesSince(promoted);
		awaitEveryNodeListening();
		Failover failover = new Failover(leader, Duration.ofNanos(Math.max(0, leader.nanoTime() - promoted)),
				Duration.ofNanos(firstWrite - promoted));
		String line = String.format(
				"Failover (%s): promotion to stable leader %d ms (term %d, by %s), to fenced " + "writes %d ms", kind,
				failover.toLeader().toMillis(), leader.term(), leader.node(), failover.toWrites().toMillis());
		System.out.println(line);
		try {
			Files.createDirectories(Path.of("target"));
			Files.writeString(Path.of("target", "failover-figures.txt"), line + System.lineSeparator(),
					StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
		}
		catch (IOException ex) {
			System.err.println("Could not record the figures: " + ex);
		}
		return failover;
	}

	/**
	 * Waits until every running node has its listening connection on the primary again,
	 * subscribed: its {@code leader-listen} session's last statement is a {@code LISTEN}.
	 */
	private void awaitEveryNodeListening() {
		List<String> nodes = this.running.values()
			.stream()
			.filter(NodeProcess::isAlive)
			.map(NodeProcess::nodeId)
			.toList();
		String sql = "SELECT count(DISTINCT application_name) FROM pg_stat_activity WHERE query LIKE 'LISTEN %' "
				+ "AND application_name = ANY (?)";
		await("every running node LISTENs on the promoted server").atMost(RECOVERY_TIMEOUT)
			.pollInterval(Duration.ofMillis(50))
			.ignoreExceptions()
			.until(() -> {
				try (Connection connection = this.cluster.dataSource().getConnection();
						PreparedStatement statement = connection.prepareStatement(sql)) {
					statement.setArray(1, connection.createArrayOf("varchar", nodes.toArray()));
					try (ResultSet row = statement.executeQuery()) {
						row.next();
						return row.getInt(1) == nodes.size();
					}
				}
			});
	}

	private long awaitWritesSince(long since) {
		AtomicLong first = new AtomicLong();
		await("a fenced write after the fault").atMost(RECOVERY_TIMEOUT)
			.pollInterval(Duration.ofMillis(20))
			.ignoreExceptions()
			.until(() -> {
				Optional<Write> write = FaultHistory.readWrites(this.cluster.dataSource())
					.stream()
					.filter((row) -> row.stampNanos() - since > 0)
					.min((a, b) -> Long.compare(a.stampNanos(), b.stampNanos()));
				write.ifPresent((row) -> first.set(row.stampNanos()));
				return write.isPresent();
			});
		return first.get();
	}

	private void awaitWrites(long term, int count) {
		await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> writesOf(term).size() >= count);
	}

	private List<Write> writesOf(long term) {
		return FaultHistory.readWrites(this.cluster.dataSource(), ALPHA, term);
	}

	private long highestGrantedTerm() {
		return grants().stream().mapToLong(Grant::term).max().orElse(0);
	}

	private List<Grant> grants() {
		List<Grant> grants = new ArrayList<>();
		for (NodeProcess node : this.cluster.nodes()) {
			node.events()
				.stream()
				.filter((event) -> event.is(Type.GRANTED, ALPHA))
				.forEach((event) -> grants.add(new Grant(node, this.incarnations.get(node), event)));
		}
		grants.sort((a, b) -> Long.compare(a.event().nanoTime(), b.event().nanoTime()));
		return grants;
	}

	private void advanceFence(FencingToken token) {
		Fencing fencing = new Fencing(new PostgresFencingStore(this.cluster.dataSource(), PREFIX, Duration.ofSeconds(2),
				Duration.ofSeconds(2)), "test");
		new TransactionTemplate(new DataSourceTransactionManager(this.cluster.dataSource()))
			.executeWithoutResult((status) -> fencing.advance("ledger", token));
	}

	/**
	 * Stops the nodes gracefully and checks the run: no term granted twice; in commit
	 * (id) order the terms of the fenced log never go down; every committed write was
	 * made by the incarnation granted its term, and none is stamped after another node
	 * was granted a higher term (including grants lost with an old primary).
	 * @return a summary of what was checked
	 */
	private String checkHistory() {
		List<NodeProcess> alive = this.running.values().stream().filter(NodeProcess::isAlive).toList();
		alive.forEach(NodeProcess::sigterm);
		alive.forEach((node) -> node.awaitExit(Duration.ofSeconds(15)));
		List<Grant> grants = grants();
		List<String> violations = new ArrayList<>();
		Map<Long, Grant> byTerm = new HashMap<>();
		for (Grant grant : grants) {
			Grant earlier = byTerm.putIfAbsent(grant.term(), grant);
			if (earlier != null) {
				violations.add("Term " + grant.term() + " granted twice: to " + earlier + " and to " + grant);
			}
		}
		List<Write> writes = FaultHistory.readWrites(this.cluster.dataSource());
		Write previous = null;
		for (Write write : writes) {
			if (previous != null && write.term() < previous.term()) {
				violations.add("In commit order the term went down: " + previous + " then " + write);
			}
			previous = write;
			Grant grant = byTerm.get(write.term());
			if (grant == null || !grant.node().nodeId().equals(write.node())
					|| grant.incarnation() != write.incarnation()) {
				violations
					.add(write + " committed under a term its incarnation was not granted (granted: " + grant + ")");
			}
			grants.stream()
				.filter((higher) -> higher.term() > write.term() && higher.event().nanoTime() - write.stampNanos() < 0)
				.findFirst()
				.ifPresent((higher) -> violations.add(write + " committed after " + higher));
		}
		assertThat(violations).as("violations").isEmpty();
		assertThat(writes).as("committed fenced writes").isNotEmpty();
		return "grants=" + grants.size() + " distinct-terms=" + byTerm.size() + " writes-committed=" + writes.size()
				+ " terms=" + grants.stream().map(Grant::term).toList() + " violations=0";
	}

	private static int leaders(List<InProcessNode> nodes) {
		return (int) nodes.stream().filter(InProcessNode::isLeader).count();
	}

	private record Failover(NodeEvent leader, Duration toLeader, Duration toWrites) {
	}

	private record Grant(NodeProcess node, long incarnation, NodeEvent event) {

		long term() {
			return this.event.term();
		}

		@Override
		public String toString() {
			return this.node.nodeId() + "#" + this.incarnation + " term " + term() + " at "
					+ (this.event.nanoTime() / 1_000_000) + " ms";
		}

	}

	/**
	 * A node in the test's JVM, on the pair's multi-host URL, with the health indicator
	 * that an application's actuator would show.
	 */
	private final class InProcessNode implements AutoCloseable {

		private final HikariDataSource dataSource;

		private final LeaderEngine engine;

		private final LeadershipHealthIndicator health;

		InProcessNode(String nodeId, List<Long> grants) {
			HikariConfig config = new HikariConfig();
			config.setJdbcUrl(PostgresHighAvailabilityTests.this.cluster.url());
			config.setUsername("postgres");
			config.setMaximumPoolSize(3);
			config.setConnectionTimeout(1000);
			config.setValidationTimeout(250);
			this.dataSource = new HikariDataSource(config);
			this.engine = new LeaderEngine(
					new PostgresCoordinationStore(this.dataSource, PREFIX, Duration.ofSeconds(1)), FAST,
					new NodeRegistration(nodeId, nodeId, "localhost", ProcessHandle.current().pid()), List.of(ALPHA),
					(event) -> {
						if (event instanceof LeadershipGrantedEvent granted) {
							grants.add(granted.term());
						}
					});
			this.health = new LeadershipHealthIndicator(this.engine);
		}

		void start() {
			this.engine.start();
		}

		boolean isLeader() {
			return this.engine.isLeader(ALPHA);
		}

		Status health() {
			return this.health.health(true).getStatus();
		}

		@Override
		public void close() {
			this.engine.stop();
			this.dataSource.close();
		}

	}

}
