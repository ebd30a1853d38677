package dev.leader.postgres;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import dev.leader.FencingToken;
import dev.leader.daemon.Assignment;
import dev.leader.daemon.AssignmentState;
import dev.leader.daemon.DaemonRequest;
import dev.leader.daemon.DaemonSnapshot;
import dev.leader.daemon.Member;
import dev.leader.jdbc.TablePrefix;
import dev.leader.node.NodeRegistration;
import dev.leader.test.Grants;
import dev.leader.test.MigratedSchema;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.IllegalTransactionStateException;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * {@link PostgresDaemonStore} against a real PostgreSQL, in a fresh schema per test: the
 * transitions, the leader's term guard and the assignment lock of fenced daemon writes.
 */
class PostgresDaemonStoreTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	private static final Duration LEASE = Duration.ofSeconds(30);

	private static final Duration EXPIRY = Duration.ofSeconds(10);

	@RegisterExtension
	final MigratedSchema schema = new MigratedSchema(6);

	private PostgresCoordinationStore leases;

	private PostgresDaemonStore store;

	private FencingToken leader;

	@BeforeEach
	void createStores() {
		this.leases = new PostgresCoordinationStore(this.schema.dataSource(), PREFIX, Duration.ofSeconds(5));
		this.store = new PostgresDaemonStore(this.schema.dataSource(), PREFIX, Duration.ofSeconds(5),
				Duration.ofSeconds(10));
		long term = Grants.acquire(this.leases, "default", "leader", LEASE).lease().term();
		this.leader = new FencingToken("default", term);
	}

	@Test
	void readShowsTheDaemonsEachNodeAdvertisesInItsHeartbeatAndWhetherItIsAlive() {
		heartbeat(new NodeRegistration("node-a", "a", "host", 1, Set.of("outbox", "reports")));
		heartbeat(new NodeRegistration("node-b", "b", "host", 2));
		JdbcClient.create(this.schema.dataSource())
			.sql("UPDATE leader_nodes SET heartbeat_at = clock_timestamp() - interval '11 seconds' "
					+ "WHERE node_id = 'node-b'")
			.update();
		DaemonSnapshot snapshot = this.store.read(EXPIRY);
		assertThat(snapshot.members()).containsExactlyInAnyOrder(new Member("leader", Set.of(), true),
				new Member("node-a", Set.of("outbox", "reports"), true), new Member("node-b", Set.of(), false));
		assertThat(snapshot.assignments()).isEmpty();
	}

	@Test
	void heartbeatOfAFollowingNodeReadsWhatAReadReadsInTheSameStatement() throws Exception {
		PostgresDaemonStore following = new PostgresDaemonStore(this.schema.dataSource(), PREFIX, Duration.ofSeconds(5),
				Duration.ofSeconds(10), this.leases);
		heartbeat(new NodeRegistration("node-b", "b", "host", 2, Set.of("outbox")));
		this.store.assign(this.leader, "leader", "outbox", "node-b", 0);
		this.store.assign(this.leader, "leader", "reports", "node-a", 0);
		this.store.acknowledge("node-b", "outbox", 1);
		this.store.drain("node-b", true);
		this.store.request(DaemonRequest.Kind.MOVE, "reports", "node-b");
		List<DaemonSnapshot> polled = new CopyOnWriteArrayList<>();
		NodeRegistration nodeA = new NodeRegistration("node-a", "a", "host", 1, Set.of("outbox", "reports"));
		try (AutoCloseable handle = following.followHeartbeat(polled::add)) {
			heartbeat(nodeA);
		}
		heartbeat(nodeA);
		// The node's own row comes from the heartbeat's upsert, so the snapshot has it
		// even on its first heartbeat.
		DaemonSnapshot read = this.store.read(EXPIRY);
		assertThat(polled).singleElement().satisfies((snapshot) -> {
			assertThat(snapshot.members()).containsExactlyInAnyOrderElementsOf(read.members());
			assertThat(snapshot.assignments()).containsExactlyInAnyOrderElementsOf(read.assignments());
			assertThat(snapshot.requests()).containsExactlyInAnyOrderElementsOf(read.requests());
			assertThat(snapshot.members()).contains(new Member("node-a", Set.of("outbox", "reports"), true),
					new Member("node-b", Set.of("outbox"), true, true));
			assertThat(snapshot.assignments()).hasSize(2);
			assertThat(snapshot.requests()).extracting(DaemonRequest::daemon).containsExactly("reports");
		});
	}

	@Test
	void assignmentGoesThroughItsStatesWithARisingGeneration() {
		assertThat(this.store.assign(this.leader, "leader", "outbox", "node-a", 0)).isEqualTo(1);
		assertThat(assignment("outbox"))
			.extracting(Assignment::node, Assignment::state, Assignment::generation, Assignment::term)
			.containsExactly("node-a", AssignmentState.ASSIGNING, 1L, this.leader.term());
		assertThat(this.store.acknowledge("node-a", "outbox", 1)).isTrue();
		assertThat(assignment("outbox").state()).isEqualTo(AssignmentState.ACTIVE);
		assertThat(this.store.revoke(this.leader, "leader", "outbox", 1)).isTrue();
		assertThat(assignment("outbox").state()).isEqualTo(AssignmentState.REVOKING);
		assertThat(this.store.release("node-a", "outbox", 1)).isTrue();
		assertThat(assignment("outbox").state()).isEqualTo(AssignmentState.DELETED);
		assertThat(this.store.assign(this.leader, "leader", "outbox", "node-b", 1)).isEqualTo(2);
		assertThat(assignment("outbox")).extracting(Assignment::node, Assignment::state, Assignment::generation)
			.containsExactly("node-b", AssignmentState.ASSIGNING, 2L);
		assertThat(this.store.reclaim(this.leader, "leader", "outbox", 2, AssignmentState.ASSIGNING)).isTrue();
		assertThat(assignment("outbox")).extracting(Assignment::state, Assignment::generation)
			.containsExactly(AssignmentState.DELETED, 2L);
	}

	@Test
	void transitionsBasedOnAnOutdatedReadChangeNothing() {
		this.store.assign(this.leader, "leader", "outbox", "node-a", 0);
		assertThat(this.store.assign(this.leader, "leader", "outbox", "node-b", 0)).as("assign a live daemon").isZero();
		assertThat(this.store.acknowledge("node-b", "outbox", 1)).as("ack by another node").isFalse();
		assertThat(this.store.acknowledge("node-a", "outbox", 2)).as("ack of another generation").isFalse();
		assertThat(this.store.release("node-b", "outbox", 1)).as("release by another node").isFalse();
		assertThat(this.store.revoke(this.leader, "leader", "outbox", 2)).as("revoke another generation").isFalse();
		this.store.reclaim(this.leader, "leader", "outbox", 1, AssignmentState.ASSIGNING);
		assertThat(this.store.acknowledge("node-a", "outbox", 1)).as("ack after reclaim").isFalse();
		assertThat(this.store.assign(this.leader, "leader", "outbox", "node-b", 0)).as("assign from an old read")
			.isZero();
		assertThat(assignment("outbox")).extracting(Assignment::node, Assignment::state, Assignment::generation)
			.containsExactly("node-a", AssignmentState.DELETED, 1L);
	}

	@Test
	void deposedLeaderCannotChangeAssignments() {
		this.store.assign(this.leader, "leader", "outbox", "node-a", 0);
		this.leases.release("leader", Map.of("default", this.leader.term()));
		long newTerm = Grants.acquire(this.leases, "default", "successor", LEASE).lease().term();
		assertThat(this.store.assign(this.leader, "leader", "reports", "node-a", 0)).isZero();
		assertThat(this.store.revoke(this.leader, "leader", "outbox", 1)).isFalse();
		assertThat(this.store.reclaim(this.leader, "leader", "outbox", 1, AssignmentState.ASSIGNING)).isFalse();
		assertThat(this.store.reclaim(new FencingToken("default", newTerm), "leader", "outbox", 1,
				AssignmentState.ASSIGNING))
			.as("the new term under the old holder's name")
			.isFalse();
		assertThat(this.store.read(EXPIRY).assignments()).singleElement()
			.extracting(Assignment::state)
			.isEqualTo(AssignmentState.ASSIGNING);
		assertThat(this.store.reclaim(new FencingToken("default", newTerm), "successor", "outbox", 1,
				AssignmentState.ASSIGNING))
			.isTrue();
	}

	@Test
	void reassignmentWaitsForATransactionThatGuardedTheAssignment() throws Exception {
		this.store.assign(this.leader, "leader", "outbox", "node-a", 0);
		CountDownLatch commit = new CountDownLatch(1);
		CompletableFuture<Assignment> guarded = lockUntil(commit, "outbox");
		CompletableFuture<Boolean> reclaim = CompletableFuture
			.supplyAsync(() -> this.store.reclaim(this.leader, "leader", "outbox", 1, AssignmentState.ASSIGNING));
		await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(2)).until(() -> !reclaim.isDone());
		commit.countDown();
		assertThat(guarded.get(10, TimeUnit.SECONDS).generation()).isEqualTo(1);
		assertThat(reclaim.get(10, TimeUnit.SECONDS)).isTrue();
	}

	@Test
	void revokeAndTheLeadersRenewalDoNotWaitForATransactionThatGuardedTheAssignment() throws Exception {
		this.store.assign(this.leader, "leader", "outbox", "node-a", 0);
		CountDownLatch commit = new CountDownLatch(1);
		CompletableFuture<Assignment> guarded = lockUntil(commit, "outbox");
		// The assignment stays current while its daemon drains, so its guarded writes may
		// go on.
		assertThat(CompletableFuture.supplyAsync(() -> this.store.revoke(this.leader, "leader", "outbox", 1))
			.get(2, TimeUnit.SECONDS)).isTrue();
		commit.countDown();
		assertThat(guarded.get(10, TimeUnit.SECONDS).generation()).isEqualTo(1);
		assertThat(assignment("outbox").state()).isEqualTo(AssignmentState.REVOKING);
	}

	@Test
	void statementBlockedInsideATransactionThatGuardedTheAssignmentHoldsTheReclaimUpOnlyUntilTheHoldLimit()
			throws Exception {
		this.store.assign(this.leader, "leader", "outbox", "node-a", 0);
		PostgresDaemonStore limited = new PostgresDaemonStore(this.schema.dataSource(), PREFIX, Duration.ofSeconds(5),
				Duration.ofMillis(800));
		TransactionTemplate transactions = new TransactionTemplate(
				new DataSourceTransactionManager(this.schema.dataSource()));
		CountDownLatch locked = new CountDownLatch(1);
		CompletableFuture<Void> guarded = CompletableFuture
			.runAsync(() -> transactions.executeWithoutResult((status) -> {
				limited.lock("outbox");
				locked.countDown();
				JdbcClient.create(this.schema.dataSource()).sql("SELECT pg_sleep(10)").query().singleRow();
			}));
		assertThat(locked.await(10, TimeUnit.SECONDS)).isTrue();
		long start = System.nanoTime();
		assertThat(CompletableFuture
			.supplyAsync(() -> this.store.reclaim(this.leader, "leader", "outbox", 1, AssignmentState.ASSIGNING))
			.get(5, TimeUnit.SECONDS)).isTrue();
		assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(3));
		assertThatExceptionOfType(java.util.concurrent.ExecutionException.class)
			.isThrownBy(() -> guarded.get(5, TimeUnit.SECONDS))
			.withMessageContaining("statement timeout");
	}

	@Test
	void lockNeedsATransaction() {
		assertThatExceptionOfType(IllegalTransactionStateException.class).isThrownBy(() -> this.store.lock("outbox"))
			.withMessageContaining("DaemonContext.guard()");
	}

	private void heartbeat(NodeRegistration node) {
		this.leases.tick(node, Map.of(), List.of(), LEASE, EXPIRY);
	}

	// Locks the daemon's assignment in a transaction on another thread, which commits
	// once
	// the latch opens; returns when the lock is held.
	private CompletableFuture<Assignment> lockUntil(CountDownLatch commit, String daemon) throws InterruptedException {
		TransactionTemplate transactions = new TransactionTemplate(
				new DataSourceTransactionManager(this.schema.dataSource()));
		CountDownLatch locked = new CountDownLatch(1);
		CompletableFuture<Assignment> guarded = CompletableFuture.supplyAsync(() -> transactions.execute((status) -> {
			Assignment assignment = this.store.lock(daemon);
			locked.countDown();
			try {
				commit.await(10, TimeUnit.SECONDS);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
			return assignment;
		}));
		assertThat(locked.await(10, TimeUnit.SECONDS)).isTrue();
		return guarded;
	}

	private Assignment assignment(String daemon) {
		return this.store.read(EXPIRY).assignment(daemon).orElseThrow();
	}

}
