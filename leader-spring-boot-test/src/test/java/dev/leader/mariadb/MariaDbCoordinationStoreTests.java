package dev.leader.mariadb;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.CoordinationStore.AcquireResult;
import dev.leader.node.NodeRegistration;
import dev.leader.test.AbstractCoordinationStoreContractTests;
import dev.leader.test.FreezeAfterLock;
import dev.leader.test.Grants;
import dev.leader.test.MigratedMariaDb;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.simple.JdbcClient;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.awaitility.Awaitility.await;

/**
 * {@link MariaDbCoordinationStore} against the machine's MariaDB passes the coordination
 * store contract, in a fresh database for the class, migrated by the starter's own Flyway
 * migrations and emptied before each test. It announces no releases.
 */
class MariaDbCoordinationStoreTests extends AbstractCoordinationStoreContractTests {

	// One connection per racing node in the fuzz test, and some to spare.
	@RegisterExtension
	static final MigratedMariaDb database = new MigratedMariaDb(12);

	// What a pool's connection-init-sql may set for the application's own transactions:
	// each of MariaDB's idle limits far above the query timeout.
	private static final String LONG_IDLE_LIMITS = "SET SESSION idle_transaction_timeout = 600, "
			+ "idle_write_transaction_timeout = 600, idle_readonly_transaction_timeout = 600";

	@Override
	protected CoordinationStore createStore() {
		return new MariaDbCoordinationStore(database.dataSource(), new TablePrefix("leader_"), Duration.ofSeconds(3));
	}

	/**
	 * A node frozen in the middle of its heartbeat, after the renewal locked its lease
	 * rows (a paused process, a stalled network), on a pool that does not auto-commit,
	 * where the heartbeat is one transaction: the server ends its idle transaction after
	 * the query timeout, so another node's grant of the expired lease is not held up for
	 * as long as the node stays frozen. A fault run caught a 3.8 s pause holding both
	 * groups of a node.
	 */
	@Test
	void nodeFrozenInsideItsHeartbeatHoldsAnotherNodesGrantUpOnlyUntilTheIdleLimit() throws Exception {
		try (HikariDataSource pool = database.database().dataSource(2, (config) -> config.setAutoCommit(false))) {
			grantWaitsOnlyForTheIdleLimit(pool);
		}
	}

	/**
	 * Where the pool auto-commits, the heartbeat's renewal commits on its own: a node
	 * frozen right after it holds no lock, so another node's grant of the expired lease
	 * waits for nothing, and the frozen heartbeat, once it goes on, reads no renewal of
	 * the term it lost.
	 */
	@Test
	void autoCommittedHeartbeatFrozenAfterItsRenewalHoldsNoLock() throws Exception {
		CoordinationStore store = createStore();
		long term = Grants.acquire(store, "g", "a", Duration.ofSeconds(1)).lease().term();
		FreezeAfterLock freeze = new FreezeAfterLock("UPDATE leader_leases SET renewed_at");
		MariaDbCoordinationStore frozen = new MariaDbCoordinationStore(freeze.wrap(database.dataSource()),
				new TablePrefix("leader_"), Duration.ofSeconds(1));
		NodeRegistration node = new NodeRegistration("a", "app", "host-a", 1);
		CompletableFuture<CoordinationStore.Tick> heartbeat = CompletableFuture.supplyAsync(
				() -> frozen.tick(node, Map.of("g", term), List.of(), Duration.ofSeconds(1), Duration.ofSeconds(10)));
		try {
			assertThat(freeze.frozen.await(5, TimeUnit.SECONDS)).as("the heartbeat froze after its renewal").isTrue();
			await().atMost(Duration.ofSeconds(5)).until(() -> database.leaseExpired("g"));
			long start = System.nanoTime();
			AcquireResult takeover = Grants.acquire(store, "g", "b", Duration.ofSeconds(10));
			assertThat(takeover.granted()).isTrue();
			assertThat(takeover.lease().term()).isEqualTo(term + 1);
			assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofMillis(500));
		}
		finally {
			freeze.thaw.countDown();
		}
		assertThat(heartbeat.get(10, TimeUnit.SECONDS).renewed()).as("no renewal of the lost term").isEmpty();
	}

	/**
	 * MariaDB ends a transaction that has written after
	 * {@code idle_write_transaction_timeout}, when set, rather than after
	 * {@code idle_transaction_timeout}: on a pool whose sessions set it high, a frozen
	 * heartbeat held the grant up for that long rather than the query timeout.
	 */
	@Test
	void nodeFrozenInsideItsHeartbeatHoldsAnotherNodesGrantUpOnlyUntilTheIdleLimitWhateverThePoolsIdleLimits()
			throws Exception {
		try (HikariDataSource pool = database.database().dataSource(2, (config) -> {
			config.setConnectionInitSql(LONG_IDLE_LIMITS);
			config.setAutoCommit(false);
		})) {
			grantWaitsOnlyForTheIdleLimit(pool);
		}
	}

	@Test
	void transitionLeavesThePoolsIdleLimitsAsTheyWere() {
		try (HikariDataSource single = database.database()
			.dataSource(1, (config) -> config.setConnectionInitSql(LONG_IDLE_LIMITS))) {
			CoordinationStore store = new MariaDbCoordinationStore(single, new TablePrefix("leader_"),
					Duration.ofSeconds(1));
			assertThat(Grants.acquire(store, "g", "a", Duration.ofSeconds(10)).granted()).isTrue();
			assertThat(JdbcClient.create(single)
				.sql("SELECT @@session.idle_transaction_timeout, @@session.idle_write_transaction_timeout, "
						+ "@@session.idle_readonly_transaction_timeout, @@session.autocommit")
				.query((rows, i) -> List.of(rows.getLong(1), rows.getLong(2), rows.getLong(3), rows.getLong(4)))
				.single()).containsExactly(600L, 600L, 600L, 1L);
		}
	}

	/**
	 * Crash takeover: a lease bound to its holder's session is refused to another node
	 * while that session lives, however the other node believes it stands, and granted,
	 * long before it expires, once an admin kills that session; the holder's watcher
	 * tells its listener that it lost the term at once, and the grant clears the binding.
	 */
	@Test
	void boundLeaseIsTakenOverOnceItsHoldersSessionEndsAndItsHolderIsTold() throws Exception {
		JdbcClient jdbc = JdbcClient.create(database.dataSource());
		MariaDbCoordinationStore holder = (MariaDbCoordinationStore) createStore();
		holder.crashTakeover(List.of("g"), "default");
		CoordinationStore other = createStore();
		BlockingQueue<Map<String, Long>> lost = new LinkedBlockingQueue<>();
		AutoCloseable listening = holder.listen(new CoordinationStore.ReleaseListener() {

			@Override
			public void released(String group, @Nullable String successor) {
			}

			@Override
			public void sessionLost(Map<String, Long> terms) {
				lost.add(terms);
			}

		});
		try {
			AcquireResult granted = Grants.acquire(holder, "g", "a", Duration.ofSeconds(60));
			assertThat(granted.granted()).isTrue();
			long term = granted.lease().term();
			// The grant binds the term on a thread of its own, off the grant's path.
			long session = await().atMost(Duration.ofSeconds(5)).until(() -> boundSession(jdbc), (bound) -> bound > 0);
			assertThat(Grants.acquire(other, "g", "b", Duration.ofSeconds(60)).granted()).as("holder's session lives")
				.isFalse();
			long killedAt = System.nanoTime();
			jdbc.sql("KILL CONNECTION " + session).update();
			assertThat(lost.poll(2, TimeUnit.SECONDS)).as("the holder is told").isEqualTo(Map.of("g", term));
			System.out.printf("holding session killed -> holder told in %d ms%n",
					(System.nanoTime() - killedAt) / 1_000_000);
			AcquireResult takeover = Grants.acquire(other, "g", "b", Duration.ofSeconds(60));
			assertThat(takeover.granted()).isTrue();
			assertThat(takeover.lease().term()).isEqualTo(term + 1);
			assertThat(boundSession(jdbc)).as("the grant cleared the binding").isZero();
		}
		finally {
			listening.close();
			holder.disconnect();
		}
	}

	/**
	 * G3 with crash takeover: the takeover of a bound lease whose holder's session ended
	 * still waits for a guarded transaction of the old term, which locks the group's
	 * {@code lease_terms} row in share mode on a connection of its own, and is granted
	 * once it ends.
	 */
	@Test
	void takeoverOfABoundLeaseWaitsForTheOldTermsGuardedTransaction() throws Exception {
		JdbcClient jdbc = JdbcClient.create(database.dataSource());
		MariaDbCoordinationStore holder = (MariaDbCoordinationStore) createStore();
		holder.crashTakeover(List.of("g"), "default");
		CoordinationStore other = createStore();
		AutoCloseable listening = holder.listen((group, successor) -> {
		});
		try (Connection guarded = database.dataSource().getConnection()) {
			long term = Grants.acquire(holder, "g", "a", Duration.ofSeconds(60)).lease().term();
			long session = await().atMost(Duration.ofSeconds(5)).until(() -> boundSession(jdbc), (bound) -> bound > 0);
			guarded.setAutoCommit(false);
			try (PreparedStatement guard = guarded.prepareStatement(
					"SELECT holder FROM leader_lease_terms WHERE group_name = 'g' AND holder = 'a' AND term = ? "
							+ "LOCK IN SHARE MODE")) {
				guard.setLong(1, term);
				try (ResultSet row = guard.executeQuery()) {
					assertThat(row.next()).as("the guard holds the old term").isTrue();
				}
			}
			jdbc.sql("KILL CONNECTION " + session).update();
			CompletableFuture<AcquireResult> takeover = CompletableFuture
				.supplyAsync(() -> Grants.acquire(other, "g", "b", Duration.ofSeconds(60)));
			await("the takeover waits for the guarded transaction").during(Duration.ofMillis(500))
				.atMost(Duration.ofSeconds(1))
				.until(() -> !takeover.isDone());
			guarded.commit();
			AcquireResult result = takeover.get(3, TimeUnit.SECONDS);
			assertThat(result.granted()).isTrue();
			assertThat(result.lease().term()).isEqualTo(term + 1);
		}
		finally {
			listening.close();
			holder.disconnect();
		}
	}

	/**
	 * Node death by session: with the daemons group a crash-takeover group, a node binds
	 * its row to its holding session on its heartbeat; once an admin kills that session,
	 * every read of the nodes (another node's heartbeat, the daemon store's read) counts
	 * it dead at once, long before its heartbeat expires, the node is told with no term,
	 * and its next heartbeat binds it again on a new session.
	 */
	@Test
	void boundNodeReadsAsDeadOnceItsHoldingSessionIsKilledAndItIsTold() throws Exception {
		JdbcClient jdbc = JdbcClient.create(database.dataSource());
		MariaDbCoordinationStore node = (MariaDbCoordinationStore) createStore();
		node.crashTakeover(List.of("default"), "default");
		CoordinationStore other = createStore();
		MariaDbDaemonStore daemons = new MariaDbDaemonStore(database.dataSource(), new TablePrefix("leader_"),
				Duration.ofSeconds(3), Duration.ofSeconds(10));
		NodeRegistration a = new NodeRegistration("a", "a", "localhost", 1);
		NodeRegistration b = new NodeRegistration("b", "b", "localhost", 2);
		Duration expiry = Duration.ofSeconds(60);
		BlockingQueue<String> lost = new LinkedBlockingQueue<>();
		AutoCloseable listening = node.listen(new CoordinationStore.ReleaseListener() {

			@Override
			public void released(String group, @Nullable String successor) {
			}

			@Override
			public void sessionLost(Map<String, Long> terms) {
				lost.add("terms " + terms);
			}

			@Override
			public void nodeSessionLost() {
				lost.add("node");
			}

		});
		try {
			node.tick(a, Map.of(), List.of(), Duration.ofSeconds(10), expiry);
			long session = boundNodeSession(jdbc, "a");
			assertThat(session).as("bound by the heartbeat").isPositive();
			assertThat(aliveInHeartbeat(other, b, expiry)).isTrue();
			assertThat(aliveInRead(daemons, expiry)).isTrue();
			long killedAt = System.nanoTime();
			jdbc.sql("KILL CONNECTION " + session).update();
			assertThat(aliveInRead(daemons, expiry)).as("dead to the daemon store's read").isFalse();
			assertThat(aliveInHeartbeat(other, b, expiry)).as("dead to another node's heartbeat").isFalse();
			System.out.printf("node's holding session killed -> read as dead in %d ms%n",
					(System.nanoTime() - killedAt) / 1_000_000);
			assertThat(lost.poll(2, TimeUnit.SECONDS)).as("the node is told, with no term").isEqualTo("node");
			assertThat(lost).isEmpty();
			node.tick(a, Map.of(), List.of(), Duration.ofSeconds(10), expiry);
			assertThat(boundNodeSession(jdbc, "a")).as("bound again on a new session")
				.isPositive()
				.isNotEqualTo(session);
			assertThat(aliveInRead(daemons, expiry)).isTrue();
		}
		finally {
			listening.close();
			node.disconnect();
		}
	}

	/**
	 * A new incarnation of a node (a restarted process under the same id, once the old
	 * one has gone silent) clears the old one's binding, so that it is not read dead for
	 * the old process's session.
	 */
	@Test
	void newIncarnationOfANodeClearsItsBinding() throws Exception {
		JdbcClient jdbc = JdbcClient.create(database.dataSource());
		MariaDbCoordinationStore node = (MariaDbCoordinationStore) createStore();
		node.crashTakeover(List.of("default"), "default");
		AutoCloseable listening = node.listen((group, successor) -> {
		});
		try {
			node.tick(new NodeRegistration("a", "a", "localhost", 1), Map.of(), List.of(), Duration.ofSeconds(10),
					Duration.ofSeconds(60));
			assertThat(boundNodeSession(jdbc, "a")).isPositive();
			jdbc.sql("UPDATE leader_nodes SET heartbeat_at = heartbeat_at - INTERVAL 1 HOUR WHERE node_id = 'a'")
				.update();
			createStore().tick(new NodeRegistration("a", "a", "localhost", 2), Map.of(), List.of(),
					Duration.ofSeconds(10), Duration.ofSeconds(60));
			assertThat(boundNodeSession(jdbc, "a")).isZero();
		}
		finally {
			listening.close();
			node.disconnect();
		}
	}

	private static boolean aliveInHeartbeat(CoordinationStore store, NodeRegistration self, Duration expiry) {
		return store.tick(self, Map.of(), List.of(), Duration.ofSeconds(10), expiry)
			.members()
			.stream()
			.filter((member) -> member.id().equals("a"))
			.findFirst()
			.orElseThrow()
			.alive();
	}

	private static boolean aliveInRead(MariaDbDaemonStore daemons, Duration expiry) {
		return daemons.read(expiry)
			.members()
			.stream()
			.filter((member) -> member.id().equals("a"))
			.findFirst()
			.orElseThrow()
			.alive();
	}

	private static long boundNodeSession(JdbcClient jdbc, String nodeId) {
		return jdbc.sql("SELECT COALESCE(session_id, 0) FROM leader_nodes WHERE node_id = ?")
			.param(nodeId)
			.query(Long.class)
			.single();
	}

	private static long boundSession(JdbcClient jdbc) {
		return jdbc.sql("SELECT COALESCE(session_id, 0) FROM leader_leases WHERE group_name = 'g'")
			.query(Long.class)
			.single();
	}

	@Test
	void crashTakeoverNeedsTheWakeUps() {
		MariaDbCoordinationStore store = new MariaDbCoordinationStore(database.dataSource(), new TablePrefix("leader_"),
				Duration.ofSeconds(3), false);
		assertThatIllegalStateException().isThrownBy(() -> store.crashTakeover(List.of("g"), "default"))
			.withMessageContaining("leader.jdbc.notifications.enabled=true");
		store.crashTakeover(List.of(), "default");
	}

	private void grantWaitsOnlyForTheIdleLimit(DataSource pool) throws Exception {
		CoordinationStore store = createStore();
		long term = Grants.acquire(store, "g", "a", Duration.ofSeconds(1)).lease().term();
		FreezeAfterLock freeze = new FreezeAfterLock("UPDATE leader_leases SET renewed_at");
		MariaDbCoordinationStore frozen = new MariaDbCoordinationStore(freeze.wrap(pool), new TablePrefix("leader_"),
				Duration.ofSeconds(1));
		NodeRegistration node = new NodeRegistration("a", "app", "host-a", 1);
		CompletableFuture<?> heartbeat = CompletableFuture.runAsync(
				() -> frozen.tick(node, Map.of("g", term), List.of(), Duration.ofSeconds(1), Duration.ofSeconds(10)));
		try {
			assertThat(freeze.frozen.await(5, TimeUnit.SECONDS)).as("the heartbeat froze after its renewal").isTrue();
			await().atMost(Duration.ofSeconds(5)).until(() -> database.leaseExpired("g"));
			long start = System.nanoTime();
			AcquireResult takeover = CompletableFuture
				.supplyAsync(() -> Grants.acquire(store, "g", "b", Duration.ofSeconds(10)))
				.get(10, TimeUnit.SECONDS);
			assertThat(takeover.granted()).isTrue();
			assertThat(takeover.lease().term()).isEqualTo(term + 1);
			assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofMillis(2500));
		}
		finally {
			freeze.thaw.countDown();
		}
		assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> heartbeat.get(10, TimeUnit.SECONDS));
	}

}
