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
import dev.leader.jdbc.MariaDbCoordinationStore;
import dev.leader.jdbc.MariaDbFencingStore;
import dev.leader.lease.CoordinationStore.AcquireResult;
import dev.leader.lease.LeaseState;
import dev.leader.test.FreezeAfterLock;
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
 * session's {@code max_statement_time} and {@code idle_transaction_timeout} (whole
 * seconds), restored when the transaction completes.
 */
class MariaDbFencingTests extends AbstractFencingTests {

	@RegisterExtension
	static final MigratedMariaDb database = new MigratedMariaDb(8);

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
	void guardThatFindsNothingToLockLeavesTheSessionsLimitsAlone() {
		FencingToken token = acquire("g", "a", Duration.ofSeconds(10));
		Fencing fencing = fencing("b", Duration.ofMillis(1500));
		List<Object> limits = this.transactions.execute((tx) -> {
			assertThatExceptionOfType(StaleLeadershipException.class).isThrownBy(() -> fencing.guard(token));
			return limits(this.jdbc);
		});
		assertThat(limits).containsExactly(0.0, 0L);
	}

	/**
	 * A holder that stalls right after its guard's lock statement (SIGSTOP, a network
	 * stall), before its next statement: the hold limits must already be set then, or the
	 * lock it holds keeps the takeover waiting for as long as the stall. They were set
	 * after the lock, and a fault run caught a takeover held up for a 4.8 s pause.
	 */
	@Test
	void holderFrozenRightAfterItsGuardLockedTheLeaseHoldsATakeoverUpOnlyUntilTheHoldLimit() throws Exception {
		FencingToken token = acquire("g", "a", Duration.ofMillis(300));
		FreezeAfterLock freeze = new FreezeAfterLock();
		DataSource freezing = freeze.wrap(dataSource());
		TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(freezing));
		Fencing fencing = new Fencing(fencingStore(freezing, Duration.ofMillis(800)), "a");
		CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> transactions.executeWithoutResult((tx) -> {
			fencing.guard(token);
			JdbcClient.create(freezing)
				.sql("INSERT INTO writes (term, node) VALUES (?, ?)")
				.params(token.term(), "a")
				.update();
		}));
		try {
			assertThat(freeze.frozen.await(5, TimeUnit.SECONDS)).as("the holder froze after its lock").isTrue();
			await().atMost(Duration.ofSeconds(5)).until(() -> expired("g"));
			long start = System.nanoTime();
			AcquireResult takeover = CompletableFuture
				.supplyAsync(() -> this.leases.acquire("g", "b", Duration.ofSeconds(10)))
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

	private static List<Object> limits(JdbcClient jdbc) {
		return jdbc.sql("SELECT @@session.max_statement_time, @@session.idle_transaction_timeout")
			.query((rows, i) -> List.<Object>of(rows.getDouble(1), rows.getLong(2)))
			.single();
	}

}
