package dev.leader.lease;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.LeadershipGrantedEvent;
import dev.leader.jdbc.LeaderSchemaMigration;
import dev.leader.jdbc.TablePrefix;
import dev.leader.mariadb.MariaDbCoordinationStore;
import dev.leader.node.NodeRegistration;
import dev.leader.postgres.PostgresCoordinationStore;
import dev.leader.test.FailOnce;
import dev.leader.test.MigratedMariaDb;
import dev.leader.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.simple.JdbcClient;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The hand-over on MariaDB, which has no notifications: followers wait for the leader's
 * wake-up lock ({@code GET_LOCK}), which a graceful release and the end of the leader's
 * session give back. The leases here last a minute, nodes heartbeat every 5 s and
 * followers retry every 20 s, so a follower that takes over within a second was woken,
 * and one that tries again and again would show in its count of acquires.
 */
class MariaDbHandOverTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	private static final LeaseSettings SETTINGS = new LeaseSettings(Duration.ofSeconds(60), Duration.ofSeconds(5),
			Duration.ofSeconds(20), Duration.ofMillis(100), Duration.ofSeconds(30), Duration.ofSeconds(3));

	private static final String GROUP = "default";

	@RegisterExtension
	static final MigratedMariaDb database = new MigratedMariaDb(16);

	private final List<LeaderEngine> engines = new CopyOnWriteArrayList<>();

	private final Map<String, Long> granted = new ConcurrentHashMap<>();

	@AfterEach
	void stopEngines() {
		this.engines.forEach(LeaderEngine::stop);
	}

	@Test
	void followerTakesTheLeaseOverAtOnceWhenTheLeaderReleasesIt() throws Exception {
		LeaderEngine a = start("a", mariaDb());
		assertThat(a.awaitLeadership(GROUP, Duration.ofSeconds(10))).isTrue();
		LeaderEngine b = start("b", mariaDb());
		LeaderEngine c = start("c", mariaDb());
		awaitWaiters(2);
		long stoppedAt = System.nanoTime();
		a.stop();
		await().atMost(Duration.ofSeconds(5)).until(() -> b.isLeader(GROUP) || c.isLeader(GROUP));
		long handOverMillis = TimeUnit.NANOSECONDS.toMillis(grantedAt(b, c) - stoppedAt);
		assertThat(handOverMillis).as("release -> successor's grant, with heartbeats every 5 s").isLessThan(1000);
	}

	/**
	 * A leader whose statement that gives its wake-up lock back fails, on a session that
	 * lives on: the connection went back to the pool with the session and its lock, and
	 * the follower waited for its retry interval (20 s here) instead of being woken.
	 */
	@Test
	void followerIsWokenAtOnceWhenTheLeaderFailsToGiveItsWakeUpLockBack() throws Exception {
		FailOnce release = new FailOnce("RELEASE_LOCK(");
		LeaderEngine a = start("a",
				new MariaDbCoordinationStore(release.wrap(database.dataSource()), PREFIX, Duration.ofSeconds(5)));
		assertThat(a.awaitLeadership(GROUP, Duration.ofSeconds(10))).isTrue();
		LeaderEngine b = start("b", mariaDb());
		awaitWaiters(1);
		long stoppedAt = System.nanoTime();
		a.stop();
		assertThat(release.failed()).as("the leader's RELEASE_LOCK failed").isTrue();
		await().atMost(Duration.ofSeconds(5)).until(() -> b.isLeader(GROUP));
		assertThat(TimeUnit.NANOSECONDS.toMillis(grantedAt(b) - stoppedAt)).as("release -> successor's grant")
			.isLessThan(1000);
	}

	@Test
	void endOfTheLeadersSessionWakesFollowersOnceAndTheyWaitAgainWithoutPolling() throws Exception {
		LeaderEngine a = start("a", mariaDb());
		assertThat(a.awaitLeadership(GROUP, Duration.ofSeconds(10))).isTrue();
		long term = a.token(GROUP).orElseThrow().term();
		AtomicInteger acquires = new AtomicInteger();
		start("b", counted(mariaDb(), acquires));
		awaitWaiters(1);
		int before = acquires.get();
		JdbcClient jdbc = JdbcClient.create(database.dataSource());
		Long holder = jdbc.sql("SELECT IS_USED_LOCK(?)").param(lockName()).query(Long.class).single();
		assertThat(holder).as("the leader's session holds the wake-up lock").isNotNull();
		jdbc.sql("KILL CONNECTION " + holder).update();
		await().atMost(Duration.ofSeconds(5)).until(() -> acquires.get() > before);
		// The leader takes its lock again on its next heartbeat, and the follower waits
		// for it again after its own.
		awaitWaiters(1);
		assertThat(jdbc.sql("SELECT IS_USED_LOCK(?)").param(lockName()).query(Long.class).single()).isNotNull()
			.isNotEqualTo(holder);
		int afterWake = acquires.get();
		// No acquire in the 3 s after the wake-up.
		await().during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(4)).until(() -> acquires.get() == afterWake);
		assertThat(afterWake - before).as("acquires after the wake-up").isBetween(1, 2);
		assertThat(a.token(GROUP)).hasValueSatisfying((token) -> assertThat(token.term()).isEqualTo(term));
	}

	@Test
	void gracefulHandOverTimesOnMariaDbNextToPostgreSql() throws Exception {
		int rounds = Integer.getInteger("leader.handover.rounds", 5);
		List<Long> mariaDb = handOvers(rounds, (node) -> mariaDb(), this::awaitWaiters);
		TestDatabase postgres = TestDatabase.createSchema();
		try (HikariDataSource dataSource = postgres.dataSource(16)) {
			new LeaderSchemaMigration(dataSource, PREFIX).migrate();
			List<Long> postgreSql = handOvers(rounds,
					(node) -> new PostgresCoordinationStore(dataSource, PREFIX, Duration.ofSeconds(5)),
					(followers) -> awaitListening(dataSource, followers + 1));
			System.out.printf(
					"Graceful hand-over, stop() -> successor's grant, 3 in-process nodes, %d rounds, "
							+ "load %.2f:%n  MariaDB (GET_LOCK wake-up): %s%n  PostgreSQL (LISTEN/NOTIFY): %s%n",
					rounds, java.lang.management.ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage(),
					summary(mariaDb), summary(postgreSql));
			assertThat(mariaDb).as("MariaDB hand-overs, ms").allMatch((millis) -> millis < 2000);
			assertThat(postgreSql).as("PostgreSQL hand-overs, ms").allMatch((millis) -> millis < 2000);
		}
		finally {
			postgres.drop();
		}
	}

	private List<Long> handOvers(int rounds, Function<String, CoordinationStore> stores,
			java.util.function.IntConsumer settle) throws Exception {
		List<LeaderEngine> nodes = new ArrayList<>();
		int next = 0;
		for (; next < 3; next++) {
			LeaderEngine node = start("n" + next, stores.apply("n" + next));
			nodes.add(node);
			if (next == 0) {
				assertThat(node.awaitLeadership(GROUP, Duration.ofSeconds(10))).isTrue();
			}
		}
		List<Long> times = new ArrayList<>();
		for (int round = 0; round < rounds; round++) {
			settle.accept(2);
			LeaderEngine leader = nodes.stream().filter((node) -> node.isLeader(GROUP)).findFirst().orElseThrow();
			nodes.remove(leader);
			this.granted.clear();
			long stoppedAt = System.nanoTime();
			leader.stop();
			this.engines.remove(leader);
			await().atMost(Duration.ofSeconds(30)).until(() -> nodes.stream().anyMatch((n) -> n.isLeader(GROUP)));
			LeaderEngine successor = nodes.stream().filter((n) -> n.isLeader(GROUP)).findFirst().orElseThrow();
			await().atMost(Duration.ofSeconds(5)).until(() -> this.granted.containsKey(successor.nodeId()));
			times.add(TimeUnit.NANOSECONDS.toMillis(this.granted.get(successor.nodeId()) - stoppedAt));
			LeaderEngine added = start("n" + next, stores.apply("n" + next));
			next++;
			nodes.add(added);
		}
		nodes.forEach(LeaderEngine::stop);
		this.engines.removeAll(nodes);
		return times;
	}

	private static String summary(List<Long> millis) {
		List<Long> sorted = millis.stream().sorted().toList();
		long median = sorted.get((sorted.size() - 1) / 2);
		long p99 = sorted.get((int) Math.ceil(0.99 * sorted.size()) - 1);
		return "median " + median + " ms, p99 " + p99 + " ms, all " + millis;
	}

	private LeaderEngine start(String id, CoordinationStore store) {
		LeaderEngine engine = new LeaderEngine(store, SETTINGS,
				new NodeRegistration(id, id, "localhost", ProcessHandle.current().pid()), List.of(GROUP), (event) -> {
					if (event instanceof LeadershipGrantedEvent grant) {
						this.granted.putIfAbsent(grant.nodeId(), System.nanoTime());
					}
				});
		this.engines.add(engine);
		engine.start();
		return engine;
	}

	private long grantedAt(LeaderEngine... candidates) {
		for (LeaderEngine candidate : candidates) {
			if (candidate.isLeader(GROUP)) {
				await().atMost(Duration.ofSeconds(5)).until(() -> this.granted.containsKey(candidate.nodeId()));
				return this.granted.get(candidate.nodeId());
			}
		}
		throw new IllegalStateException("No successor");
	}

	private CoordinationStore mariaDb() {
		return new MariaDbCoordinationStore(database.dataSource(), PREFIX, Duration.ofSeconds(5));
	}

	// Waits until this many sessions wait for the group's wake-up lock.
	private void awaitWaiters(int count) {
		awaitSessions(database.dataSource(),
				"SELECT count(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND STATE = 'User lock'",
				count);
	}

	private String lockName() {
		return "leader_wake:" + database.database().name() + ":" + GROUP;
	}

	// Waits until every node's listening session on PostgreSQL has subscribed: its last
	// statement is a LISTEN.
	private static void awaitListening(DataSource dataSource, int nodes) {
		awaitSessions(dataSource,
				"SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'",
				nodes);
	}

	// Waits until the query, which counts sessions, counts at least this many.
	private static void awaitSessions(DataSource dataSource, String countQuery, int count) {
		await().atMost(Duration.ofSeconds(20))
			.until(() -> JdbcClient.create(dataSource).sql(countQuery).query(Long.class).single() >= count);
	}

	private static CoordinationStore counted(CoordinationStore store, AtomicInteger acquires) {
		return (CoordinationStore) Proxy.newProxyInstance(CoordinationStore.class.getClassLoader(),
				new Class<?>[] { CoordinationStore.class }, (proxy, method, arguments) -> {
					if (method.getName().equals("acquire")) {
						acquires.incrementAndGet();
					}
					try {
						return method.invoke(store, arguments);
					}
					catch (InvocationTargetException ex) {
						throw ex.getCause();
					}
				});
	}

}
