package dev.leader.postgres;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leader.jdbc.LeaderSchemaMigration;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.CoordinationStore.AcquireResult;
import dev.leader.lease.CoordinationStore.Tick;
import dev.leader.node.NodeRegistration;
import dev.leader.test.AbstractCoordinationStoreContractTests;
import dev.leader.test.Grants;
import dev.leader.test.SlowCommit;
import dev.leader.test.TestDatabase;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;

import org.springframework.dao.DataAccessException;
import org.springframework.dao.DuplicateKeyException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * {@link PostgresCoordinationStore} against a real PostgreSQL, in a fresh schema per
 * test, migrated by the starter's own Flyway migrations; plus how it keeps the connection
 * of its round trips.
 */
class PostgresCoordinationStoreTests extends AbstractCoordinationStoreContractTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	private static final NodeRegistration NODE = new NodeRegistration("node-k", "app-k", "host-k", 201);

	/**
	 * Longer than the time HikariCP lets a connection idle before it checks it on
	 * lending.
	 */
	private static final Duration IDLE = Duration.ofMillis(700);

	private TestDatabase database;

	private HikariDataSource dataSource;

	@Override
	protected CoordinationStore createStore() throws SQLException {
		this.database = TestDatabase.createSchema();
		// The pool counts its connection checks in a sequence, so that a test can tell
		// whether one preceded a round trip: a check is a transaction on the server, as
		// much load as the round trip itself.
		try (Connection connection = this.database.connect(); Statement statement = connection.createStatement()) {
			statement.execute("CREATE SEQUENCE " + this.database.schema() + ".pool_checks");
		}
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(this.database.url());
		config.setUsername(this.database.user());
		config.setPassword(this.database.password());
		// One connection per racing node in the fuzz test, one for the release listener,
		// and some to spare.
		config.setMaximumPoolSize(12);
		config.setConnectionTimeout(3000);
		config.setKeepaliveTime(0);
		config.setConnectionTestQuery("SELECT nextval('" + this.database.schema() + ".pool_checks')");
		config.addDataSourceProperty("ApplicationName", this.database.schema());
		this.dataSource = new HikariDataSource(config);
		new LeaderSchemaMigration(this.dataSource, PREFIX).migrate();
		return new PostgresCoordinationStore(this.dataSource, PREFIX, Duration.ofSeconds(3));
	}

	@Override
	protected void destroyStore(CoordinationStore store) {
		if (this.dataSource != null) {
			this.dataSource.close();
		}
		if (this.database != null) {
			this.database.drop();
		}
	}

	@Override
	protected boolean supportsReleaseNotifications() {
		return true;
	}

	@Test
	void roundTripsAfterIdlingReuseTheLastConnectionWithoutThePoolCheckingIt() throws Exception {
		CoordinationStore store = store();
		tick(store);
		long checks = poolChecks();
		for (int i = 0; i < 3; i++) {
			// Not synchronisation: the connection must sit idle long enough for the pool
			// to want to check it.
			Thread.sleep(IDLE.toMillis());
			tick(store);
			assertThat(Grants.acquire(store, "kept", NODE, Duration.ofSeconds(10)).granted()).isTrue();
		}
		assertThat(poolChecks()).as("connection checks by the pool").isEqualTo(checks);
		assertThat(this.dataSource.getHikariPoolMXBean().getActiveConnections()).as("connections kept").isOne();
	}

	@Test
	void disconnectGivesTheKeptConnectionBackAndTheNextRoundTripBorrowsAgain() {
		CoordinationStore store = store();
		tick(store);
		assertThat(this.dataSource.getHikariPoolMXBean().getActiveConnections()).isOne();
		store.disconnect();
		assertThat(this.dataSource.getHikariPoolMXBean().getActiveConnections()).isZero();
		tick(store);
		assertThat(this.dataSource.getHikariPoolMXBean().getActiveConnections()).isOne();
	}

	@Test
	void roundTripAfterTheKeptSessionWasTerminatedFailsOnceThenRunsOnAFreshConnection() throws Exception {
		CoordinationStore store = store();
		tick(store);
		List<Integer> terminated = terminateKeptSession();
		assertThat(terminated).hasSize(1);
		await().atMost(Duration.ofSeconds(5)).until(() -> sessions().stream().noneMatch(terminated::contains));
		assertThatExceptionOfType(DataAccessException.class).isThrownBy(() -> tick(store));
		tick(store);
		assertThat(sessions()).doesNotContainAnyElementsOf(terminated).isNotEmpty();
		assertThat(this.dataSource.getHikariPoolMXBean().getActiveConnections()).isOne();
	}

	@Test
	void releaseWaivesTheWalFlushForItsOwnTransactionOnlySoTheNextAcquireOnItsConnectionStaysDurable()
			throws SQLException {
		String serverDefault = setting(this.database.connect());
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(this.database.url());
		config.setUsername(this.database.user());
		config.setPassword(this.database.password());
		// One connection: the store's round trips and the check below share it.
		config.setMaximumPoolSize(1);
		try (HikariDataSource single = new HikariDataSource(config)) {
			CoordinationStore store = new PostgresCoordinationStore(single, PREFIX, Duration.ofSeconds(3));
			long term = Grants.acquire(store, "durable", NODE, Duration.ofSeconds(10)).lease().term();
			assertThat(store.release(NODE.id(), Map.of("durable", term))).containsExactly("durable");
			store.disconnect();
			assertThat(setting(single.getConnection())).as("synchronous_commit after a release")
				.isEqualTo(serverDefault);
		}
	}

	/**
	 * After each notification pgjdbc checks for another; with its wait, a check that
	 * finds none blocks for 1 ms, so 200 of them take at least 200 ms. Without it, they
	 * only look at what has arrived.
	 */
	@Test
	void listeningConnectionChecksForMoreNotificationsWithoutWaitingUntilItGoesBackToThePool() throws SQLException {
		try (Connection connection = this.dataSource.getConnection()) {
			PromptNotifications prompt = PromptNotifications.enable(connection);
			assertThat(prompt).isNotNull();
			assertThat(timeOf200Checks(connection)).isLessThan(Duration.ofMillis(100));
			prompt.restore();
			assertThat(timeOf200Checks(connection)).isGreaterThanOrEqualTo(Duration.ofMillis(200));
		}
	}

	private static Duration timeOf200Checks(Connection connection) throws SQLException {
		PGConnection notifications = connection.unwrap(PGConnection.class);
		long start = System.nanoTime();
		for (int i = 0; i < 200; i++) {
			assertThat(notifications.getNotifications()).isEmpty();
		}
		return Duration.ofNanos(System.nanoTime() - start);
	}

	private static String setting(Connection connection) throws SQLException {
		try (connection;
				Statement statement = connection.createStatement();
				ResultSet row = statement.executeQuery("SHOW synchronous_commit")) {
			row.next();
			return row.getString(1);
		}
	}

	/**
	 * Two processes registering one node id in the same moment: the heartbeat that waits
	 * for the other's insert changes nothing once it commits, and must not return as if
	 * it had registered, or its process would go on to ask for leases under the id.
	 */
	@Test
	void heartbeatThatWaitedForAnotherProcessRegisteringTheIdFailsAsADuplicate() throws Exception {
		CoordinationStore store = store();
		try (Connection other = this.database.connect()) {
			other.setAutoCommit(false);
			try (Statement statement = other.createStatement()) {
				statement.executeUpdate("INSERT INTO leader_nodes (node_id, name, host, pid, incarnation, started_at, "
						+ "heartbeat_at) VALUES ('" + NODE.id() + "', 'other', 'host-x', 999, 'other-process', "
						+ "clock_timestamp(), clock_timestamp())");
			}
			CompletableFuture<Void> heartbeat = CompletableFuture.runAsync(() -> tick(store));
			await("the heartbeat to wait for the other insert").atMost(Duration.ofSeconds(5))
				.until(() -> !query(
						"SELECT pid FROM pg_stat_activity WHERE application_name = ? " + "AND wait_event_type = 'Lock'",
						this.database.schema())
					.isEmpty());
			other.commit();
			assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> heartbeat.get(5, TimeUnit.SECONDS))
				.havingCause()
				.isInstanceOf(DuplicateKeyException.class)
				.withMessageContaining("registered in the same moment");
		}
	}

	/**
	 * A grant whose commit takes longer than the node expiry (a stalled disk, a slow
	 * synchronous standby) stamps the node's heartbeat when it runs, not when it commits,
	 * and its lease is invisible to other sessions until then: another process with the
	 * id, waiting for the node's row meanwhile, must still not take the id over while
	 * that lease is valid, or both would lead the group.
	 */
	@Test
	void grantWhoseCommitOutlastsTheNodeExpiryKeepsTheIdFromAnotherProcess() throws Exception {
		Duration nodeExpiry = Duration.ofSeconds(1);
		Duration lease = Duration.ofSeconds(10);
		SlowCommit slow = new SlowCommit("attempt AS (", nodeExpiry.multipliedBy(2));
		PostgresCoordinationStore granting = new PostgresCoordinationStore(slow.wrap(this.dataSource), PREFIX,
				Duration.ofSeconds(3));
		granting.tick(NODE, Map.of(), List.of(), lease, nodeExpiry);
		CompletableFuture<AcquireResult> grant = CompletableFuture
			.supplyAsync(() -> granting.acquire("g", NODE, lease));
		assertThat(slow.executed.await(5, TimeUnit.SECONDS)).as("the grant ran").isTrue();
		NodeRegistration again = new NodeRegistration(NODE.id(), NODE.name(), NODE.host(), NODE.pid() + 1);
		CompletableFuture<Tick> takeover = CompletableFuture
			.supplyAsync(() -> store().tick(again, Map.of(), List.of(), lease, nodeExpiry));
		assertThat(grant.get(10, TimeUnit.SECONDS).granted()).isTrue();
		assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> takeover.get(10, TimeUnit.SECONDS))
			.havingCause()
			.isInstanceOf(DuplicateKeyException.class);
		assertThat(query("SELECT pid FROM leader_nodes WHERE node_id = ?", NODE.id())).containsExactly(NODE.pid());
	}

	/**
	 * A grant whose commit outlasts twice the node expiry, while another node's heartbeat
	 * would forget the granted node's row and another process with the id waits to
	 * register: the row is kept while the lease granted under it is valid, so that the
	 * other process, whose snapshot missed the lease, cannot register and be granted the
	 * group too. The forgetting heartbeat queues for the row first, as it would on the
	 * server, before the registration does.
	 */
	@Test
	void rowOfAGrantCommittedLateIsNotForgottenWhileItsLeaseIsValid() throws Exception {
		Duration nodeExpiry = Duration.ofSeconds(1);
		Duration lease = Duration.ofSeconds(20);
		SlowCommit slow = new SlowCommit("attempt AS (", Duration.ofSeconds(5));
		PostgresCoordinationStore granting = new PostgresCoordinationStore(slow.wrap(this.dataSource), PREFIX,
				Duration.ofSeconds(10));
		granting.tick(NODE, Map.of(), List.of(), lease, nodeExpiry);
		CompletableFuture<AcquireResult> grant = CompletableFuture
			.supplyAsync(() -> granting.acquire("g", NODE, lease));
		assertThat(slow.executed.await(5, TimeUnit.SECONDS)).as("the grant ran").isTrue();
		// Until the row's last committed heartbeat is twice the node expiry old.
		await().atMost(Duration.ofSeconds(4))
			.until(() -> query("SELECT count(*) FROM leader_nodes WHERE node_id = ? "
					+ "AND heartbeat_at < clock_timestamp() - interval '2100 milliseconds'", NODE.id()),
					List.of(1L)::equals);
		NodeRegistration other = new NodeRegistration("node-o", "app-o", "host-o", 202);
		CompletableFuture<Tick> forgetting = CompletableFuture
			.supplyAsync(() -> store().tick(other, Map.of(), List.of(), lease, nodeExpiry));
		await().atMost(Duration.ofSeconds(2)).until(() -> forgetting.isDone() || waitingTicks() == 1);
		long queued = waitingTicks();
		NodeRegistration again = new NodeRegistration(NODE.id(), NODE.name(), NODE.host(), NODE.pid() + 1);
		CompletableFuture<Tick> takeover = CompletableFuture
			.supplyAsync(() -> store().tick(again, Map.of(), List.of(), lease, nodeExpiry));
		await().atMost(Duration.ofSeconds(2)).until(() -> waitingTicks() == queued + 1);
		assertThat(grant).as("the grant, still to commit once both heartbeats queued").isNotDone();
		assertThat(grant.get(10, TimeUnit.SECONDS).granted()).isTrue();
		forgetting.get(10, TimeUnit.SECONDS);
		assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> takeover.get(10, TimeUnit.SECONDS))
			.havingCause()
			.isInstanceOf(DuplicateKeyException.class);
		store().tick(other, Map.of(), List.of(), lease, nodeExpiry);
		assertThat(query("SELECT pid FROM leader_nodes WHERE node_id = ?", NODE.id()))
			.as("the row, after another heartbeat of the other node")
			.containsExactly(NODE.pid());
		assertThat(store().acquire("g", again, lease).granted()).as("a grant to the process that did not register")
			.isFalse();
	}

	/**
	 * A node whose row is gone while it holds a lease (forgotten by a heartbeat of an
	 * earlier version of the starter, say) registers again with its next heartbeat, and
	 * the row it inserts records the expiry of the leases it renews, so that no other
	 * process takes the id over while they are valid.
	 */
	@Test
	void rowInsertedByTheHeartbeatOfALeaseHolderRecordsTheLeasesExpiry() throws Exception {
		Duration lease = Duration.ofSeconds(20);
		CoordinationStore store = store();
		long term = Grants.acquire(store, "g", NODE, lease).lease().term();
		query("DELETE FROM leader_nodes WHERE node_id = ? RETURNING 0", NODE.id());
		Tick tick = store.tick(NODE, Map.of("g", term), List.of(), lease, Duration.ofSeconds(1));
		assertThat(tick.renewed()).containsKey("g");
		assertThat(query("SELECT count(*) FROM leader_nodes WHERE node_id = ? "
				+ "AND leases_until > clock_timestamp() + interval '10 seconds'", NODE.id()))
			.containsExactly(1L);
	}

	// Heartbeats of this test's schema waiting for a row lock (the server keeps the
	// first 1 kB of a statement's text).
	private long waitingTicks() throws SQLException {
		return query("SELECT count(*) FROM pg_stat_activity WHERE application_name = ? AND wait_event_type = 'Lock' "
				+ "AND query LIKE 'WITH held AS%'", this.database.schema())
			.get(0);
	}

	private CoordinationStore store() {
		return new PostgresCoordinationStore(this.dataSource, PREFIX, Duration.ofSeconds(3));
	}

	private static void tick(CoordinationStore store) {
		store.tick(NODE, Map.of(), List.of("kept"), Duration.ofSeconds(10), Duration.ofSeconds(10));
	}

	private long poolChecks() throws SQLException {
		return query("SELECT last_value FROM " + this.database.schema() + ".pool_checks").get(0);
	}

	private List<Integer> sessions() throws SQLException {
		return query("SELECT pid FROM pg_stat_activity WHERE application_name = ?", this.database.schema()).stream()
			.map(Long::intValue)
			.toList();
	}

	/**
	 * Terminates the session whose last statement was the tick: the connection the store
	 * keeps. The pool's idle connections are left alone, since the pool does not check
	 * one that idled only briefly before lending it.
	 */
	private List<Integer> terminateKeptSession() throws SQLException {
		String kept = "SELECT pid FROM pg_stat_activity WHERE application_name = ? AND query LIKE '%INTO leader_nodes%'";
		List<Integer> sessions = query(kept, this.database.schema()).stream().map(Long::intValue).toList();
		query("SELECT pg_terminate_backend(pid)::int FROM (" + kept + ") s", this.database.schema());
		return sessions;
	}

	private List<Long> query(String sql, String... parameters) throws SQLException {
		try (Connection connection = this.database.connect();
				PreparedStatement statement = connection.prepareStatement(sql)) {
			for (int i = 0; i < parameters.length; i++) {
				statement.setString(i + 1, parameters[i]);
			}
			try (ResultSet rows = statement.executeQuery()) {
				List<Long> values = new java.util.ArrayList<>();
				while (rows.next()) {
					values.add(rows.getLong(1));
				}
				return values;
			}
		}
	}

}
