package dev.leader.mariadb;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.FencingToken;
import dev.leader.StaleLeadershipException;
import dev.leader.fencing.Fencing;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.CoordinationStore.Tick;
import dev.leader.log.LogStore;
import dev.leader.node.NodeRegistration;
import dev.leader.test.Grants;
import dev.leader.test.MigratedMariaDb;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * What a MariaDB guard that does not lock its lease (refused or expired) still holds in
 * the caller's transaction, and for how long. MariaDB reads a row found by its primary
 * key during optimisation ("Impossible WHERE noticed after reading const tables") and
 * keeps its lock even at {@code READ COMMITTED}, so the refused guard keeps a shared lock
 * on {@code lease_terms}; the expired guard keeps it by design. Both used to undo the
 * hold limits, and at {@code SERIALIZABLE} the refused path's reads of the lease row and
 * the log head, for the message, locked them too (an adversarial review reproduced each).
 * The caller here catches the {@link StaleLeadershipException} and stays in its
 * transaction, as a process that stalls (a GC pause, SIGSTOP, a network stall) before its
 * rollback reaches the server does.
 */
class MariaDbRefusedGuardTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	private static final Duration QUERY_TIMEOUT = Duration.ofSeconds(5);

	private static final Duration HOLD_LIMIT = Duration.ofSeconds(2);

	private static final NodeRegistration NODE_A = new NodeRegistration("a", "a", "host-a", 1, Set.of());

	private static final NodeRegistration NODE_B = new NodeRegistration("b", "b", "host-b", 2, Set.of());

	@RegisterExtension
	static final MigratedMariaDb database = new MigratedMariaDb(2);

	@Test
	void anExpiredGuardThatTheCallerOutlivesHoldsATakeoverUpForNoLongerThanTheHoldLimit() throws Exception {
		try (HikariDataSource pool = database.database().dataSource(6, (config) -> {
			config.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
			config.setAutoCommit(true);
		})) {
			MariaDbCoordinationStore coordination = new MariaDbCoordinationStore(pool, PREFIX, QUERY_TIMEOUT, false);
			Fencing fencing = new Fencing(
					new MariaDbFencingStore(pool, PREFIX, QUERY_TIMEOUT, HOLD_LIMIT, coordination), "a");
			FencingToken token = new FencingToken("g",
					Grants.acquire(coordination, "g", NODE_A, Duration.ofSeconds(1)).lease().term());
			// The holder's heartbeats stop: the lease expires by the database clock.
			await().atMost(Duration.ofSeconds(5)).until(() -> database.leaseExpired("g"));
			CountDownLatch refused = new CountDownLatch(1);
			CountDownLatch letGo = new CountDownLatch(1);
			CompletableFuture<Void> caller = inTransaction(pool, () -> {
				assertThatExceptionOfType(StaleLeadershipException.class).isThrownBy(() -> fencing.guard(token));
				refused.countDown();
				awaitQuietly(letGo, Duration.ofSeconds(15));
			});
			try {
				assertThat(refused.await(10, TimeUnit.SECONDS)).isTrue();
				MariaDbCoordinationStore other = new MariaDbCoordinationStore(pool, PREFIX, QUERY_TIMEOUT, false);
				// Within the hold limit, plus the query timeout of one attempt.
				await().atMost(HOLD_LIMIT.plus(QUERY_TIMEOUT).plusSeconds(1))
					.ignoreExceptions()
					.until(() -> Grants.acquire(other, "g", NODE_B, Duration.ofSeconds(10)).granted());
			}
			finally {
				letGo.countDown();
				caller.handle((ok, ex) -> null).get(20, TimeUnit.SECONDS);
			}
		}
	}

	@Test
	void aStaleGuardThatTheCallerOutlivesHoldsTheNewHoldersReleaseUpForNoLongerThanTheHoldLimit() throws Exception {
		try (HikariDataSource pool = database.database().dataSource(6, (config) -> {
			config.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
			config.setAutoCommit(true);
		})) {
			MariaDbCoordinationStore a = new MariaDbCoordinationStore(pool, PREFIX, QUERY_TIMEOUT, false);
			MariaDbCoordinationStore b = new MariaDbCoordinationStore(pool, PREFIX, QUERY_TIMEOUT, false);
			Fencing fencing = new Fencing(new MariaDbFencingStore(pool, PREFIX, QUERY_TIMEOUT, HOLD_LIMIT, a), "a");
			FencingToken stale = new FencingToken("g",
					Grants.acquire(a, "g", NODE_A, Duration.ofSeconds(30)).lease().term());
			assertThat(a.release("a", Map.of("g", stale.term()))).containsExactly("g");
			long bTerm = Grants.acquire(b, "g", NODE_B, Duration.ofSeconds(30)).lease().term();
			CountDownLatch refused = new CountDownLatch(1);
			CountDownLatch letGo = new CountDownLatch(1);
			CompletableFuture<Void> caller = inTransaction(pool, () -> {
				assertThatExceptionOfType(StaleLeadershipException.class).isThrownBy(() -> fencing.guard(stale));
				refused.countDown();
				awaitQuietly(letGo, Duration.ofSeconds(15));
			});
			try {
				assertThat(refused.await(10, TimeUnit.SECONDS)).isTrue();
				await().atMost(HOLD_LIMIT.plus(QUERY_TIMEOUT).plusSeconds(1))
					.ignoreExceptions()
					.until(() -> b.release("b", Map.of("g", bTerm)).contains("g"));
			}
			finally {
				letGo.countDown();
				caller.handle((ok, ex) -> null).get(20, TimeUnit.SECONDS);
			}
		}
	}

	@Test
	void aStaleGuardInASerializableTransactionHoldsUpNeitherTheHoldersRenewalNorItsAppend() throws Exception {
		assertSerializableCallerHoldsUpNothing(
				(fencing, log, stale) -> assertThatExceptionOfType(StaleLeadershipException.class)
					.isThrownBy(() -> fencing.guard(stale)));
	}

	@Test
	void aRefusedAppendInASerializableTransactionHoldsUpNeitherTheHoldersRenewalNorItsAppend() throws Exception {
		assertSerializableCallerHoldsUpNothing(
				(fencing, log, stale) -> assertThat(log.append(stale, "a", "decision", "stale").entry()).isNull());
	}

	private void assertSerializableCallerHoldsUpNothing(StaleWrite staleWrite) throws Exception {
		try (HikariDataSource pool = database.database().dataSource(6, (config) -> {
			config.setTransactionIsolation("TRANSACTION_SERIALIZABLE");
			config.setAutoCommit(false);
		})) {
			MariaDbCoordinationStore a = new MariaDbCoordinationStore(pool, PREFIX, QUERY_TIMEOUT, false);
			MariaDbCoordinationStore b = new MariaDbCoordinationStore(pool, PREFIX, QUERY_TIMEOUT, false);
			Fencing fencing = new Fencing(new MariaDbFencingStore(pool, PREFIX, QUERY_TIMEOUT, HOLD_LIMIT, a), "a");
			MariaDbLogStore logA = new MariaDbLogStore(pool, PREFIX, QUERY_TIMEOUT, HOLD_LIMIT, a);
			MariaDbLogStore logB = new MariaDbLogStore(pool, PREFIX, QUERY_TIMEOUT, HOLD_LIMIT, b);
			b.tick(NODE_B, Map.of(), List.of(), Duration.ofSeconds(30), Duration.ofSeconds(30));
			FencingToken stale = new FencingToken("g",
					Grants.acquire(a, "g", NODE_A, Duration.ofSeconds(30)).lease().term());
			assertThat(a.release("a", Map.of("g", stale.term()))).containsExactly("g");
			FencingToken current = new FencingToken("g",
					Grants.acquire(b, "g", NODE_B, Duration.ofSeconds(30)).lease().term());
			CountDownLatch refused = new CountDownLatch(1);
			CountDownLatch letGo = new CountDownLatch(1);
			CompletableFuture<Void> caller = inTransaction(pool, () -> {
				staleWrite.run(fencing, logA, stale);
				refused.countDown();
				awaitQuietly(letGo, Duration.ofSeconds(15));
			});
			try {
				assertThat(refused.await(10, TimeUnit.SECONDS)).isTrue();
				Tick renewal = CompletableFuture.supplyAsync(() -> b.tick(NODE_B, Map.of("g", current.term()),
						List.of("g"), Duration.ofSeconds(30), Duration.ofSeconds(30)))
					.get(QUERY_TIMEOUT.plusSeconds(2).toSeconds(), TimeUnit.SECONDS);
				assertThat(renewal.renewed()).as("the holder's renewal").containsKey("g");
				LogStore.Appended appended = CompletableFuture
					.supplyAsync(() -> logB.append(current, "b", "decision", "current"))
					.get(QUERY_TIMEOUT.plusSeconds(2).toSeconds(), TimeUnit.SECONDS);
				assertThat(appended.entry()).as("the holder's append").isNotNull();
			}
			finally {
				letGo.countDown();
				caller.handle((ok, ex) -> null).get(20, TimeUnit.SECONDS);
			}
		}
	}

	private static CompletableFuture<Void> inTransaction(HikariDataSource pool, Runnable work) {
		TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(pool));
		return CompletableFuture.runAsync(() -> transactions.executeWithoutResult((tx) -> work.run()));
	}

	private static void awaitQuietly(CountDownLatch latch, Duration timeout) {
		try {
			latch.await(timeout.toMillis(), TimeUnit.MILLISECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	@FunctionalInterface
	private interface StaleWrite {

		void run(Fencing fencing, MariaDbLogStore log, FencingToken stale);

	}

}
