package dev.leader.daemon;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leader.DaemonAgent;
import dev.leader.DaemonStoppedEvent;
import dev.leader.DaemonStoppedEvent.Reason;
import dev.leader.LeadershipGrantedEvent;
import dev.leader.NodeJoinedEvent;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.LeaderEngine;
import dev.leader.lease.LeaseSettings;
import dev.leader.node.NodeRegistration;
import dev.leader.postgres.PostgresCoordinationStore;
import dev.leader.postgres.PostgresDaemonStore;
import dev.leader.test.CountingDataSource;
import dev.leader.test.CountingDataSource.Execution;
import dev.leader.test.InProcessNodes;
import dev.leader.test.NodeProxies;
import dev.leader.test.StallingProxy;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.postgresql.PGConnection;

import org.springframework.jdbc.core.simple.JdbcClient;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * In-process behaviour of {@link DaemonCoordinator} with its {@link LeaderEngine} against
 * real PostgreSQL, under faults made in the database: a row lock that holds a heartbeat's
 * reply up after its write, a revoked privilege that fails the heartbeats after it, and a
 * connection terminated under an acknowledgement.
 */
class DaemonCoordinatorTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	private static final Duration QUERY_TIMEOUT = Duration.ofSeconds(3);

	private static final String HEARTBEAT = "DO UPDATE SET heartbeat_at";

	private static final String ACKNOWLEDGE = "SET state = 'ACTIVE'";

	@RegisterExtension
	final InProcessNodes nodes = new InProcessNodes();

	@RegisterExtension
	final NodeProxies proxies = new NodeProxies(() -> this.nodes.database().url());

	@Test
	void daemonsStopByNodeExpiryMinusMarginAfterTheSendOfTheLastHeartbeatThatSucceededHoweverLateItsReply()
			throws Exception {
		// Node expiry 4 s, safety margin 1 s: the daemons must stop within 3 s of the
		// send, 1.5 s after the reply.
		LeaseSettings lease = new LeaseSettings(Duration.ofSeconds(5), Duration.ofMillis(500), Duration.ofMillis(500),
				Duration.ofSeconds(1), Duration.ofSeconds(4), Duration.ofSeconds(4));
		Duration limit = lease.nodeExpiry().minus(lease.safetyMargin());
		Duration replyDelay = Duration.ofMillis(1500);
		AtomicLong stoppedAt = new AtomicLong();
		CountDownLatch stopped = new CountDownLatch(1);
		DaemonAgent agent = (context) -> {
			try {
				context.awaitCancellation(Duration.ofMinutes(1));
			}
			finally {
				if (stoppedAt.compareAndSet(0, System.nanoTime())) {
					stopped.countDown();
				}
			}
		};
		// The node logs in as a role of its own, so that a revoked privilege makes its
		// next heartbeats fail.
		String role = "r_" + this.nodes.database().schema();
		execute("CREATE ROLE " + role + " LOGIN",
				"GRANT ALL ON SCHEMA " + this.nodes.database().schema() + " TO " + role,
				"GRANT ALL ON ALL TABLES IN SCHEMA " + this.nodes.database().schema() + " TO " + role);
		this.nodes.closeAfterTest(
				() -> execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '" + role + "'",
						"DROP OWNED BY " + role, "DROP ROLE " + role));
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(this.nodes.database().url());
		config.setUsername(role);
		config.setMaximumPoolSize(8);
		HikariDataSource nodeDataSource = new HikariDataSource(config);
		this.nodes.closeAfterTest(nodeDataSource::close);
		CountingDataSource counted = new CountingDataSource(nodeDataSource);
		start("a", lease, DaemonSettings.defaults(), counted.dataSource(), counted.dataSource(), agent);
		awaitActive("steady", "a", 1);
		try (Connection locker = this.nodes.database().connect();
				Connection observer = this.nodes.database().connect()) {
			// The lease of the daemons group, which the node leads, locked: it holds the
			// heartbeat's renewal up after the heartbeat wrote this node's heartbeat_at,
			// from which the database counts the node expiry: the reply comes late, the
			// write does not.
			locker.setAutoCommit(false);
			execute(locker, "SELECT group_name FROM leader_leases WHERE group_name = 'default' FOR UPDATE");
			await().atMost(Duration.ofSeconds(3))
				.pollInterval(Duration.ofMillis(5))
				.until(() -> blockedBy(observer, pid(locker)), (pid) -> pid != 0);
			long heldSince = System.nanoTime();
			// Committed with the release of the lock, so that the held-up heartbeat, past
			// its privilege checks, is the last that succeeds.
			execute(locker, "REVOKE UPDATE ON leader_nodes FROM " + role);
			TimeUnit.NANOSECONDS.sleep(heldSince + replyDelay.toNanos() - System.nanoTime());
			locker.commit();
			assertThat(stopped.await(10, TimeUnit.SECONDS)).isTrue();
			// The database's clock runs at the same rate as this one: its age of the
			// heartbeat, less the time since the stop, is at least its age when the
			// daemon stopped.
			long queried = System.nanoTime();
			long heartbeatAgeAtStop = query(observer, """
					SELECT (extract(epoch from (clock_timestamp() - heartbeat_at)) * 1000)::bigint
					FROM leader_nodes WHERE node_id = 'a'
					""") - TimeUnit.NANOSECONDS.toMillis(queried - stoppedAt.get());
			List<Execution> heartbeats = counted.executions().stream().filter(Execution.containing(HEARTBEAT)).toList();
			String timeline = timeline(heartbeats, stoppedAt.get());
			Execution lastSucceeded = heartbeats.stream()
				.filter((execution) -> execution.failure() == null && execution.returnedAt() - stoppedAt.get() < 0)
				.max(Comparator.comparingLong(Execution::sentAt))
				.orElseThrow();
			assertThat(Duration.ofNanos(lastSucceeded.returnedAt() - lastSucceeded.sentAt()))
				.as("reply time of the last heartbeat that succeeded; heartbeats, ms from the stop: %s", timeline)
				.isGreaterThanOrEqualTo(replyDelay.minusMillis(50));
			// The watchdog looks every 100 ms; the rest of the allowance is for a busy
			// machine. Counted from the reply, the stop comes the whole reply time (1.5
			// s) later.
			assertThat(Duration.ofNanos(stoppedAt.get() - lastSucceeded.sentAt()))
				.as("time from the send of the last heartbeat that succeeded to the daemon's stop; heartbeats: %s",
						timeline)
				.isLessThanOrEqualTo(limit.plusMillis(600));
			assertThat(heartbeatAgeAtStop).as("age of the node's heartbeat in the database when its daemon stopped")
				.isLessThan(lease.nodeExpiry().toMillis());
			await().atMost(Duration.ofSeconds(2))
				.until(() -> this.nodes.events()
					.stream()
					.anyMatch((event) -> event instanceof DaemonStoppedEvent stop
							&& stop.reason() == Reason.CONTACT_LOST));
		}
	}

	@Test
	void failedAcknowledgementIsRetriedSoTheDaemonStaysOnItsNodeWithItsGeneration() throws Exception {
		LeaseSettings lease = new LeaseSettings(Duration.ofSeconds(2), Duration.ofMillis(300), Duration.ofMillis(300),
				Duration.ofMillis(200), Duration.ofSeconds(2), Duration.ofSeconds(2));
		DaemonSettings daemons = new DaemonSettings("default", Duration.ofSeconds(4), Duration.ofSeconds(4), 2,
				Duration.ZERO);
		AtomicInteger runs = new AtomicInteger();
		AtomicBoolean cancelled = new AtomicBoolean();
		DaemonAgent agent = (context) -> {
			runs.incrementAndGet();
			try {
				context.awaitCancellation(Duration.ofMinutes(1));
			}
			finally {
				cancelled.set(context.isCancelled());
			}
		};
		FaultingDataSource terminating = new FaultingDataSource(this.nodes.dataSource(), ACKNOWLEDGE, this::terminate);
		start("a", lease, daemons, this.nodes.dataSource(), terminating.dataSource(), agent);
		await().atMost(Duration.ofSeconds(5)).until(() -> runs.get() > 0);
		awaitActive("steady", "a", 1);
		assertThat(terminating.faults()).as("backends terminated under an acknowledgement").isOne();
		assertThat(terminating.failures()).as("acknowledgements that failed").isOne();
		long ackMillis = JdbcClient.create(this.nodes.dataSource())
			.sql("SELECT (extract(epoch from (acked_at - assigned_at)) * 1000)::bigint FROM leader_assignments "
					+ "WHERE daemon_name = 'steady'")
			.query(Long.class)
			.single();
		assertThat(ackMillis).as("time from assignment to acknowledgement, ms")
			.isLessThan(daemons.ackTimeout().toMillis() / 2);
		// Past the ack timeout, counted from the assignment: the daemon has not moved.
		await().during(daemons.ackTimeout())
			.atMost(daemons.ackTimeout().plusSeconds(2))
			.until(() -> assignment("steady"), (row) -> row.equals("ACTIVE a 1"));
		assertThat(runs.get()).isOne();
		assertThat(cancelled.get()).isFalse();
		assertThat(this.nodes.events()).noneMatch((event) -> event instanceof DaemonStoppedEvent);
	}

	/**
	 * A second process started with the node id of a live one is kept out of the
	 * registration, and must leave that process's daemons alone: only a process whose
	 * heartbeats succeed hands back an assignment of its node id that it did not start.
	 */
	@Test
	void secondProcessWithTheNodeIdOfALiveOneLeavesItsDaemonRunning() {
		LeaseSettings lease = new LeaseSettings(Duration.ofSeconds(2), Duration.ofMillis(300), Duration.ofMillis(300),
				Duration.ofMillis(200), Duration.ofSeconds(2), Duration.ofSeconds(2));
		DaemonSettings daemons = new DaemonSettings("default", Duration.ofSeconds(4), Duration.ofSeconds(4), 2,
				Duration.ZERO);
		AtomicInteger runs = new AtomicInteger();
		DaemonAgent agent = (context) -> {
			runs.incrementAndGet();
			context.awaitCancellation(Duration.ofMinutes(1));
		};
		start("a", lease, daemons, this.nodes.dataSource(), this.nodes.dataSource(), agent);
		awaitActive("steady", "a", 1);
		start("a", ProcessHandle.current().pid() + 1, lease, daemons, this.nodes.dataSource(), this.nodes.dataSource(),
				agent);
		// Several heartbeats and daemon cycles of the second process.
		await().during(Duration.ofSeconds(3))
			.atMost(Duration.ofSeconds(5))
			.until(() -> assignment("steady"), (row) -> row.equals("ACTIVE a 1"));
		assertThat(runs.get()).isOne();
		assertThat(this.nodes.events()).noneMatch((event) -> event instanceof DaemonStoppedEvent);
	}

	@Test
	void daemonWhoseAcknowledgementIsHeldUpNeverRunsOnTwoNodesAtOnceWhenTheLeaderReassignsItAtTheAckTimeout()
			throws Exception {
		// Node a leads, assigns the daemon to itself, and its network stalls as it sends
		// the acknowledgement: its lease expires after 1.2 s and b, leading then,
		// reclaims
		// the daemon at the 1 s ack timeout and runs it, while node a still counts as
		// alive (5 s node expiry) and its watchdog would stop a daemon only 4.8 s after
		// its last heartbeat was sent.
		LeaseSettings lease = new LeaseSettings(Duration.ofMillis(1200), Duration.ofMillis(200), Duration.ofMillis(200),
				Duration.ofMillis(200), Duration.ofSeconds(5), Duration.ofSeconds(5));
		DaemonSettings daemons = new DaemonSettings("default", Duration.ofSeconds(1), Duration.ofSeconds(1), 2,
				Duration.ZERO);
		Duration stall = Duration.ofSeconds(6);
		List<Run> runs = new CopyOnWriteArrayList<>();
		StallingProxy proxyOfA = this.proxies.get("a");
		DataSource throughProxy = poolThrough(proxyOfA);
		AtomicLong stalledAt = new AtomicLong();
		FaultingDataSource stalling = new FaultingDataSource(throughProxy, ACKNOWLEDGE, (connection) -> {
			stalledAt.set(System.nanoTime());
			proxyOfA.stall(stall);
		});
		LeaderEngine engineOfA = start("a", lease, daemons, throughProxy, stalling.dataSource(), recording("a", runs));
		await().atMost(Duration.ofSeconds(5)).until(() -> stalling.faults() == 1);
		start("b", lease, daemons, this.nodes.dataSource(), this.nodes.dataSource(), recording("b", runs));
		awaitActive("steady", "b", 2);
		await().atMost(Duration.ofSeconds(2)).until(() -> runs.stream().anyMatch((run) -> run.node().equals("b")));
		// Node a is back once it has sent a heartbeat that succeeded after the stall; its
		// daemons cycle followed that heartbeat's snapshot.
		await().atMost(stall.plusSeconds(5))
			.until(() -> System.nanoTime() - stalledAt.get() > stall.toNanos() && engineOfA.sinceLastHeartbeat()
				.filter((since) -> since.toNanos() < System.nanoTime() - stalledAt.get() - stall.toNanos())
				.isPresent());
		awaitActive("steady", "b", 2);
		long now = System.nanoTime();
		List<String> timeline = runs.stream().map((run) -> run.describe(stalledAt.get(), now)).toList();
		for (Run onA : runs.stream().filter((run) -> run.node().equals("a")).toList()) {
			for (Run onB : runs.stream().filter((run) -> run.node().equals("b")).toList()) {
				assertThat(onA.overlaps(onB, now))
					.as("a run on a overlaps a run on b; runs, ms from the stall: %s", timeline)
					.isFalse();
			}
		}
	}

	@Test
	void daemonRevokedWhileItsNodeCannotReadItsAssignmentsNeverRunsOnTwoNodesAtOnce() throws Exception {
		LeaseSettings lease = new LeaseSettings(Duration.ofSeconds(2), Duration.ofMillis(300), Duration.ofMillis(300),
				Duration.ofMillis(200), Duration.ofSeconds(5), Duration.ofSeconds(2));
		DaemonSettings daemons = new DaemonSettings("default", Duration.ofSeconds(2), Duration.ofSeconds(1), 2,
				Duration.ZERO);
		List<Run> runs = new CopyOnWriteArrayList<>();
		// b leads and runs the daemon first.
		start("b", lease, daemons, this.nodes.dataSource(), this.nodes.dataSource(), recording("b", runs));
		awaitActive("steady", "b", 1);
		StallingProxy proxyOfA = this.proxies.get("a");
		DataSource throughProxy = poolThrough(proxyOfA);
		// a heartbeats directly; its daemon store's connections go through the proxy: its
		// heartbeats go on while its reads of the assignments stall.
		start("a", lease, daemons, this.nodes.dataSource(), throughProxy, recording("a", runs));
		PostgresDaemonStore operator = new PostgresDaemonStore(this.nodes.dataSource(), PREFIX, QUERY_TIMEOUT,
				Duration.ofSeconds(4));
		operator.request(DaemonRequest.Kind.MOVE, "steady", "a");
		awaitActive("steady", "a", 2);
		await().atMost(Duration.ofSeconds(3)).until(() -> runs.stream().anyMatch((run) -> run.node().equals("a")));
		long stalledAt = System.nanoTime();
		proxyOfA.stall(Duration.ofSeconds(6));
		operator.request(DaemonRequest.Kind.MOVE, "steady", "b");
		awaitActive("steady", "b", 3);
		await().atMost(Duration.ofSeconds(3))
			.until(() -> runs.stream().anyMatch((run) -> run.node().equals("b") && run.generation() == 3));
		// Give a's run the time to end, if it is going to end before the stall does.
		await().atMost(Duration.ofSeconds(10))
			.until(() -> runs.stream()
				.filter((run) -> run.node().equals("a"))
				.allMatch((run) -> run.ended().get() != 0));
		long now = System.nanoTime();
		List<String> timeline = runs.stream().map((run) -> run.describe(stalledAt, now)).toList();
		Run onA = runs.stream().filter((run) -> run.node().equals("a")).findFirst().orElseThrow();
		Run onB = runs.stream()
			.filter((run) -> run.node().equals("b") && run.generation() == 3)
			.findFirst()
			.orElseThrow();
		assertThat(onA.overlaps(onB, now)).as("a run on a overlaps a run on b; runs, ms from the stall: %s", timeline)
			.isFalse();
	}

	/**
	 * Returns a pool of 8 connections whose every connection goes through the proxy.
	 */
	private DataSource poolThrough(StallingProxy proxy) {
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(proxy.jdbcUrl());
		config.setUsername(this.nodes.dataSource().getUsername());
		config.setPassword(this.nodes.dataSource().getPassword());
		config.setMaximumPoolSize(8);
		HikariDataSource pool = new HikariDataSource(config);
		this.nodes.closeAfterTest(pool::close);
		return pool;
	}

	/**
	 * Returns an agent that honours its context and records each of its runs.
	 */
	private static DaemonAgent recording(String node, List<Run> runs) {
		return (context) -> {
			Run run = new Run(node, context.generation(), System.nanoTime(), new AtomicLong());
			runs.add(run);
			try {
				context.awaitCancellation(Duration.ofMinutes(1));
			}
			finally {
				run.ended().set(System.nanoTime());
			}
		};
	}

	private LeaderEngine start(String node, LeaseSettings lease, DaemonSettings daemons, DataSource engineDataSource,
			DataSource daemonDataSource, DaemonAgent agent) {
		return start(node, ProcessHandle.current().pid(), lease, daemons, engineDataSource, daemonDataSource, agent);
	}

	private LeaderEngine start(String node, long pid, LeaseSettings lease, DaemonSettings daemons,
			DataSource engineDataSource, DataSource daemonDataSource, DaemonAgent agent) {
		PostgresCoordinationStore coordination = new PostgresCoordinationStore(engineDataSource, PREFIX, QUERY_TIMEOUT);
		DaemonCoordinator[] coordinator = new DaemonCoordinator[1];
		LeaderEngine engine = new LeaderEngine(coordination, lease, new NodeRegistration(node, node, "localhost", pid),
				List.of(), (event) -> {
					this.nodes.events().add(event);
					if (coordinator[0] != null
							&& (event instanceof LeadershipGrantedEvent || event instanceof NodeJoinedEvent)) {
						coordinator[0].wake();
					}
				});
		coordinator[0] = new DaemonCoordinator(engine, engine, engine,
				new PostgresDaemonStore(daemonDataSource, PREFIX, QUERY_TIMEOUT,
						lease.nodeExpiry().minus(lease.safetyMargin()), coordination),
				daemons, Map.of("steady", agent), this.nodes.events()::add);
		engine.start();
		coordinator[0].start();
		this.nodes.closeAfterTest(engine::stop);
		this.nodes.closeAfterTest(coordinator[0]::stop);
		return engine;
	}

	private static String timeline(List<Execution> executions, long origin) {
		return executions.stream()
			.map((execution) -> String.format("sent %+d returned %+d%s",
					TimeUnit.NANOSECONDS.toMillis(execution.sentAt() - origin),
					TimeUnit.NANOSECONDS.toMillis(execution.returnedAt() - origin),
					(execution.failure() != null) ? " failed" : ""))
			.toList()
			.toString();
	}

	private void awaitActive(String daemon, String node, long generation) {
		await().atMost(Duration.ofSeconds(8))
			.until(() -> assignment(daemon), (row) -> row.equals("ACTIVE " + node + " " + generation));
	}

	private String assignment(String daemon) {
		return JdbcClient.create(this.nodes.dataSource())
			.sql("SELECT state || ' ' || node_id || ' ' || generation FROM leader_assignments WHERE daemon_name = ?")
			.param(daemon)
			.query(String.class)
			.optional()
			.orElse("none");
	}

	/**
	 * Terminates the backend of a connection with {@code pg_terminate_backend}, and waits
	 * until it is gone: a real connection failure.
	 */
	private void terminate(Connection connection) throws SQLException {
		long pid = pid(connection);
		try (Connection admin = this.nodes.database().connect()) {
			assertThat(query(admin, "SELECT pg_terminate_backend(?::int)::int", pid)).isOne();
			await().atMost(Duration.ofSeconds(5))
				.pollInterval(Duration.ofMillis(5))
				.until(() -> query(admin, "SELECT count(*) FROM pg_stat_activity WHERE pid = ?::int", pid) == 0);
		}
	}

	private static long pid(Connection connection) throws SQLException {
		return connection.unwrap(PGConnection.class).getBackendPID();
	}

	/**
	 * Returns a session that waits for a lock the given one holds, or 0.
	 */
	private static long blockedBy(Connection observer, long pid) throws SQLException {
		return query(observer,
				"SELECT coalesce(min(pid), 0) FROM pg_stat_activity WHERE ?::int = ANY " + "(pg_blocking_pids(pid))",
				pid);
	}

	private static long query(Connection connection, String sql, Object... parameters) throws SQLException {
		try (PreparedStatement statement = connection.prepareStatement(sql)) {
			for (int i = 0; i < parameters.length; i++) {
				statement.setObject(i + 1, parameters[i]);
			}
			try (ResultSet rows = statement.executeQuery()) {
				rows.next();
				return rows.getLong(1);
			}
		}
	}

	private void execute(String... statements) throws SQLException {
		try (Connection connection = this.nodes.database().connect()) {
			for (String sql : statements) {
				execute(connection, sql);
			}
		}
	}

	private static void execute(Connection connection, String sql, Object... parameters) {
		try (PreparedStatement statement = connection.prepareStatement(sql)) {
			for (int i = 0; i < parameters.length; i++) {
				statement.setObject(i + 1, parameters[i]);
			}
			statement.execute();
		}
		catch (SQLException ex) {
			throw new IllegalStateException(ex);
		}
	}

	/**
	 * One run of an agent, on {@link System#nanoTime()}; {@code ended} is 0 while it
	 * runs.
	 */
	private record Run(String node, long generation, long started, AtomicLong ended) {

		boolean overlaps(Run other, long now) {
			return this.started - other.end(now) < 0 && other.started - end(now) < 0;
		}

		long end(long now) {
			long end = this.ended.get();
			return (end != 0) ? end : now;
		}

		String describe(long origin, long now) {
			return String.format("%s generation %d from %+d to %s", this.node, this.generation,
					TimeUnit.NANOSECONDS.toMillis(this.started - origin), (this.ended.get() != 0)
							? String.format("%+d", TimeUnit.NANOSECONDS.toMillis(end(now) - origin)) : "running");
		}

	}

	/**
	 * A data source that makes a real fault happen just before the first statement
	 * containing the given text is sent, timed by this wrapper: the fault itself (a
	 * terminated backend, a stalled network) is made outside the driver.
	 */
	private static final class FaultingDataSource {

		private final DataSource target;

		private final String text;

		private final Fault fault;

		private final AtomicInteger faults = new AtomicInteger();

		private final AtomicInteger failures = new AtomicInteger();

		FaultingDataSource(DataSource target, String text, Fault fault) {
			this.target = target;
			this.text = text;
			this.fault = fault;
		}

		DataSource dataSource() {
			return proxy(DataSource.class, this.target, (method, args,
					result) -> (result instanceof Connection connection) ? connection(connection) : result);
		}

		int faults() {
			return this.faults.get();
		}

		int failures() {
			return this.failures.get();
		}

		private Connection connection(Connection connection) {
			return proxy(Connection.class, connection, (method, args, result) -> {
				if (result instanceof PreparedStatement statement && args != null && args[0] instanceof String sql
						&& sql.contains(this.text)) {
					return statement(connection, statement);
				}
				return result;
			});
		}

		private PreparedStatement statement(Connection connection, PreparedStatement statement) {
			return (PreparedStatement) Proxy.newProxyInstance(getClass().getClassLoader(),
					new Class<?>[] { PreparedStatement.class }, (p, method, args) -> {
						boolean executes = method.getName().startsWith("execute");
						if (executes && this.faults.get() == 0) {
							this.fault.before(connection);
							this.faults.incrementAndGet();
						}
						try {
							return invoke(statement, method, args);
						}
						catch (Throwable ex) {
							if (executes) {
								this.failures.incrementAndGet();
							}
							throw ex;
						}
					});
		}

		private static <T> T proxy(Class<T> type, Object target, Decorator decorator) {
			return type
				.cast(Proxy.newProxyInstance(DaemonCoordinatorTests.class.getClassLoader(), new Class<?>[] { type },
						(p, method, args) -> decorator.decorate(method, args, invoke(target, method, args))));
		}

		private static Object invoke(Object target, Method method, Object @Nullable [] args) throws Throwable {
			try {
				return method.invoke(target, args);
			}
			catch (InvocationTargetException ex) {
				throw ex.getCause();
			}
		}

	}

	@FunctionalInterface
	private interface Fault {

		void before(Connection connection) throws SQLException;

	}

	@FunctionalInterface
	private interface Decorator {

		Object decorate(Method method, Object @Nullable [] args, Object result) throws Throwable;

	}

}
