package dev.leader.mariadb;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.FencingToken;
import dev.leader.daemon.Assignment;
import dev.leader.daemon.AssignmentState;
import dev.leader.jdbc.TablePrefix;
import dev.leader.node.NodeRegistration;
import dev.leader.test.FreezeAfterLock;
import dev.leader.test.Grants;
import dev.leader.test.MigratedMariaDb;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * The row locks of {@link MariaDbDaemonStore}: the daemon guard locks the owner row, so
 * an acknowledgement and a revoke, which update the assignment row alone, never wait for
 * a guarded transaction, and a reclaim, which ends the assignment, does.
 */
class MariaDbDaemonStoreTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	@RegisterExtension
	static final MigratedMariaDb database = new MigratedMariaDb(8);

	private MariaDbCoordinationStore coordination;

	private MariaDbDaemonStore daemons;

	private TransactionTemplate transactions;

	private FencingToken leader;

	@BeforeEach
	void leadAndAssign() {
		HikariDataSource dataSource = database.dataSource();
		this.coordination = new MariaDbCoordinationStore(dataSource, PREFIX, Duration.ofSeconds(5));
		this.daemons = new MariaDbDaemonStore(dataSource, PREFIX, Duration.ofSeconds(5), Duration.ofSeconds(10));
		this.transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
		this.coordination.tick(new NodeRegistration("node-a", "a", "host", 1, Set.of("outbox")), Map.of(), List.of(),
				Duration.ofSeconds(30), Duration.ofSeconds(10));
		this.leader = new FencingToken("default",
				Grants.acquire(this.coordination, "default", "leader", Duration.ofSeconds(30)).lease().term());
		assertThat(this.daemons.assign(this.leader, "leader", "outbox", "node-a", 0)).isOne();
	}

	@Test
	void acknowledgementAndRevokeDoNotWaitForTheGuardedTransactionButAReclaimDoes() throws Exception {
		CountDownLatch guarded = new CountDownLatch(1);
		CountDownLatch finish = new CountDownLatch(1);
		CompletableFuture<Assignment> writer = CompletableFuture.supplyAsync(() -> this.transactions.execute((tx) -> {
			Assignment locked = this.daemons.lock("outbox");
			guarded.countDown();
			await().atMost(Duration.ofSeconds(10))
				.pollInterval(Duration.ofMillis(10))
				.until(() -> finish.getCount() == 0);
			return locked;
		}));
		assertThat(guarded.await(5, TimeUnit.SECONDS)).isTrue();
		assertThat(CompletableFuture.supplyAsync(() -> this.daemons.acknowledge("node-a", "outbox", 1))
			.get(2, TimeUnit.SECONDS)).isTrue();
		assertThat(CompletableFuture.supplyAsync(() -> this.daemons.revoke(this.leader, "leader", "outbox", 1))
			.get(2, TimeUnit.SECONDS)).isTrue();
		CompletableFuture<Boolean> reclaim = CompletableFuture
			.supplyAsync(() -> this.daemons.reclaim(this.leader, "leader", "outbox", 1, AssignmentState.REVOKING));
		await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(2)).until(() -> !reclaim.isDone());
		finish.countDown();
		assertThat(writer.get(5, TimeUnit.SECONDS))
			.extracting(Assignment::node, Assignment::generation, Assignment::state)
			.containsExactly("node-a", 1L, AssignmentState.ASSIGNING);
		assertThat(reclaim.get(5, TimeUnit.SECONDS)).isTrue();
		assertThat(this.daemons.read(Duration.ofSeconds(10)).assignment("outbox"))
			.hasValueSatisfying((assignment) -> assertThat(assignment.state()).isEqualTo(AssignmentState.DELETED));
	}

	@Test
	void guardAfterTheEndOfTheAssignmentSeesItDeleted() {
		assertThat(this.daemons.reclaim(this.leader, "leader", "outbox", 1, AssignmentState.ASSIGNING)).isTrue();
		Assignment locked = this.transactions.execute((tx) -> this.daemons.lock("outbox"));
		assertThat(locked).extracting(Assignment::generation, Assignment::isLive).containsExactly(1L, false);
	}

	/**
	 * A holder that stalls right after the daemon guard's lock statement: the hold limits
	 * must already be set, so that the leader's reclaim waits only until the server ends
	 * the idle transaction, as for the lease guard in {@code MariaDbFencingTests}.
	 */
	@Test
	void holderFrozenRightAfterTheDaemonGuardsLockHoldsAReclaimUpOnlyUntilTheHoldLimit() throws Exception {
		FreezeAfterLock freeze = new FreezeAfterLock();
		DataSource freezing = freeze.wrap(database.dataSource());
		MariaDbDaemonStore guards = new MariaDbDaemonStore(freezing, PREFIX, Duration.ofSeconds(5),
				Duration.ofMillis(800));
		TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(freezing));
		CompletableFuture<Integer> writer = CompletableFuture.supplyAsync(() -> transactions.execute((tx) -> {
			guards.lock("outbox");
			return JdbcClient.create(freezing).sql("SELECT 1").query(Integer.class).single();
		}));
		try {
			assertThat(freeze.frozen.await(5, TimeUnit.SECONDS)).as("the holder froze after its lock").isTrue();
			long start = System.nanoTime();
			assertThat(CompletableFuture
				.supplyAsync(() -> this.daemons.reclaim(this.leader, "leader", "outbox", 1, AssignmentState.ASSIGNING))
				.get(10, TimeUnit.SECONDS)).isTrue();
			assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(3));
		}
		finally {
			freeze.thaw.countDown();
		}
		assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> writer.get(10, TimeUnit.SECONDS));
	}

}
