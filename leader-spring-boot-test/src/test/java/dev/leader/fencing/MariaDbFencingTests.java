package dev.leader.fencing;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.FencingToken;
import dev.leader.StaleLeadershipException;
import dev.leader.lease.CoordinationStore.AcquireResult;
import dev.leader.lease.LeaseState;
import dev.leader.mariadb.MariaDbCoordinationStore;
import dev.leader.mariadb.MariaDbFencingStore;
import dev.leader.test.FreezeAfterLock;
import dev.leader.test.Grants;
import dev.leader.test.MigratedMariaDb;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * {@link Fencing} against the machine's MariaDB: the lease guard and the fences table
 * (guarantee G3), as {@link FencingTests} shows them on PostgreSQL, in a fresh database
 * for the class, emptied before each test. The application's transactions run at
 * MariaDB's default, {@code REPEATABLE READ}. What differs: the hold limits are the
 * session's {@code max_statement_time} and its three idle limits (whole seconds),
 * restored when the transaction completes.
 */
class MariaDbFencingTests extends AbstractFencingTests {

	@RegisterExtension
	static final MigratedMariaDb database = new MigratedMariaDb(8);

	// What a pool's connection-init-sql may set for the application's own transactions:
	// each of MariaDB's idle limits far above any hold limit.
	private static final String LONG_IDLE_LIMITS = "SET SESSION idle_transaction_timeout = 600, "
			+ "idle_write_transaction_timeout = 600, idle_readonly_transaction_timeout = 600";

	MariaDbFencingTests() {
		super(MariaDbCoordinationStore::new,
				(dataSource, prefix, queryTimeout, holdLimit, coordination) -> new MariaDbFencingStore(dataSource,
						prefix, queryTimeout, holdLimit, (MariaDbCoordinationStore) coordination),
				new SlowStatement("SELECT SLEEP(10)", "max_statement_time"));
	}

	@Override
	DataSource dataSource() {
		return database.dataSource();
	}

	@Override
	boolean expired(String group) {
		return this.leases.leases()
			.stream()
			.filter((lease) -> lease.group().equals(group))
			.noneMatch(LeaseState::isHeld);
	}

	@Test
	void guardKeepsALowerStatementTimeOfTheSessionOtherwiseSetsTheHoldLimitAndRestoresTheSessionAfterwards() {
		FencingToken token = acquire("g", "a", Duration.ofSeconds(10));
		// One connection, so that what the pool lends after the transaction is the
		// connection it ran on.
		try (HikariDataSource single = database.database().dataSource(1)) {
			TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(single));
			JdbcClient jdbc = JdbcClient.create(single);
			Fencing fencing = new Fencing(fencingStore(single, Duration.ofMillis(2500)), "a");
			List<Object> limits = transactions.execute((tx) -> {
				fencing.guard(token);
				fencing.guard(token);
				return limits(jdbc);
			});
			assertThat(limits).containsExactly(2.5, 2L);
			assertThat(limits(jdbc)).as("the session's limits after the transaction").containsExactly(0.0, 0L);
			List<Object> kept = transactions.execute((tx) -> {
				jdbc.sql("SET SESSION max_statement_time = 0.2").update();
				fencing.guard(token);
				return limits(jdbc);
			});
			assertThat(kept).containsExactly(0.2, 2L);
			assertThat(limits(jdbc)).as("the session's own limits after the transaction").containsExactly(0.2, 0L);
		}
	}

	@Test
	void refusedGuardKeepsTheHoldLimitsForTheRestOfItsTransaction() {
		// Its key lookup may have locked the lease_terms row, which a takeover or a
		// release would otherwise wait for as long as the caller's transaction lasts.
		FencingToken token = acquire("g", "a", Duration.ofSeconds(10));
		Fencing fencing = fencing("b", Duration.ofMillis(1500));
		List<Object> limits = this.transactions.execute((tx) -> {
			assertThatExceptionOfType(StaleLeadershipException.class).isThrownBy(() -> fencing.guard(token));
			return limits(this.jdbc);
		});
		assertThat(limits).containsExactly(1.5, 1L);
	}

	/**
	 * A holder that stalls right after its guard's lock statement (SIGSTOP, a network
	 * stall), before its next statement: the hold limits must already be set then, or the
	 * lock it holds keeps the takeover waiting for as long as the stall. They were set
	 * after the lock, and a fault run caught a takeover held up for a 4.8 s pause.
	 */
	@Test
	void holderFrozenRightAfterItsGuardLockedTheLeaseHoldsATakeoverUpOnlyUntilTheHoldLimit() throws Exception {
		takeoverWaitsOnlyForTheHoldLimit(dataSource(), new FreezeAfterLock(), false);
	}

	/**
	 * MariaDB ends a transaction that has written after
	 * {@code idle_write_transaction_timeout}, when set, and not after
	 * {@code idle_transaction_timeout}: a pool whose sessions set it high kept a frozen
	 * writer's lock, and the takeover waited, for that long rather than the hold limit.
	 */
	@Test
	void holderFrozenAfterItsGuardedWriteHoldsATakeoverUpOnlyUntilTheHoldLimitWhateverThePoolsIdleLimits()
			throws Exception {
		try (HikariDataSource pool = database.database()
			.dataSource(2, (config) -> config.setConnectionInitSql(LONG_IDLE_LIMITS))) {
			takeoverWaitsOnlyForTheHoldLimit(pool, new FreezeAfterLock("INSERT INTO writes"), true);
		}
	}

	/**
	 * The same for a transaction that has not written yet, which MariaDB ends after
	 * {@code idle_readonly_transaction_timeout}, when set: the guard's shared lock alone
	 * does not make it a writing one.
	 */
	@Test
	void holderFrozenRightAfterItsGuardHoldsATakeoverUpOnlyUntilTheHoldLimitWhateverThePoolsIdleLimits()
			throws Exception {
		try (HikariDataSource pool = database.database()
			.dataSource(2, (config) -> config.setConnectionInitSql(LONG_IDLE_LIMITS))) {
			takeoverWaitsOnlyForTheHoldLimit(pool, new FreezeAfterLock(), false);
		}
	}

	@Test
	void guardLowersEachIdleLimitOfTheSessionToTheHoldLimitKeepsALowerOneAndRestoresThemAfterwards() {
		FencingToken token = acquire("g", "a", Duration.ofSeconds(10));
		try (HikariDataSource single = database.database()
			.dataSource(1, (config) -> config.setConnectionInitSql(LONG_IDLE_LIMITS))) {
			TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(single));
			JdbcClient jdbc = JdbcClient.create(single);
			Fencing fencing = new Fencing(fencingStore(single, Duration.ofMillis(2500)), "a");
			List<Long> lowered = transactions.execute((tx) -> {
				fencing.guard(token);
				return idleLimits(jdbc);
			});
			assertThat(lowered).as("idle, idle write, idle read-only").containsExactly(2L, 2L, 2L);
			assertThat(idleLimits(jdbc)).as("the session's own limits after the transaction")
				.containsExactly(600L, 600L, 600L);
			List<Long> kept = transactions.execute((tx) -> {
				jdbc.sql("SET SESSION idle_write_transaction_timeout = 1").update();
				fencing.guard(token);
				return idleLimits(jdbc);
			});
			assertThat(kept).containsExactly(2L, 1L, 2L);
			assertThat(idleLimits(jdbc)).containsExactly(600L, 1L, 600L);
		}
	}

	// Guards, writes if asked to, and freezes at its next statement; the takeover of the
	// expired lease must then wait for the hold limit of 800 ms (the idle limit of one
	// second) only, and the frozen transaction must not commit.
	private void takeoverWaitsOnlyForTheHoldLimit(DataSource pool, FreezeAfterLock freeze, boolean write)
			throws Exception {
		FencingToken token = acquire("g", "a", Duration.ofMillis(300));
		DataSource freezing = freeze.wrap(pool);
		TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(freezing));
		Fencing fencing = new Fencing(fencingStore(freezing, Duration.ofMillis(800)), "a");
		JdbcClient jdbc = JdbcClient.create(freezing);
		CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> transactions.executeWithoutResult((tx) -> {
			fencing.guard(token);
			jdbc.sql("INSERT INTO writes (term, node) VALUES (?, ?)").params(token.term(), "a").update();
			if (write) {
				jdbc.sql("SELECT 1").query(Integer.class).single();
			}
		}));
		try {
			assertThat(freeze.frozen.await(5, TimeUnit.SECONDS)).as("the holder froze").isTrue();
			await().atMost(Duration.ofSeconds(5)).until(() -> expired("g"));
			long start = System.nanoTime();
			AcquireResult takeover = CompletableFuture
				.supplyAsync(() -> Grants.acquire(this.leases, "g", "b", Duration.ofSeconds(10)))
				.get(10, TimeUnit.SECONDS);
			assertThat(takeover.granted()).isTrue();
			assertThat(takeover.lease().term()).isEqualTo(token.term() + 1);
			assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(3));
		}
		finally {
			freeze.thaw.countDown();
		}
		assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> writer.get(10, TimeUnit.SECONDS));
		assertThat(this.jdbc.sql("SELECT count(*) FROM writes").query(Long.class).single()).isZero();
	}

	private static List<Long> idleLimits(JdbcClient jdbc) {
		return jdbc
			.sql("SELECT @@session.idle_transaction_timeout, @@session.idle_write_transaction_timeout, "
					+ "@@session.idle_readonly_transaction_timeout")
			.query((rows, i) -> List.of(rows.getLong(1), rows.getLong(2), rows.getLong(3)))
			.single();
	}

	private static List<Object> limits(JdbcClient jdbc) {
		return jdbc.sql("SELECT @@session.max_statement_time, @@session.idle_transaction_timeout")
			.query((rows, i) -> List.<Object>of(rows.getDouble(1), rows.getLong(2)))
			.single();
	}

}
