package dev.leader.test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

import dev.leader.FencingToken;
import dev.leader.fencing.FencingStore;
import dev.leader.fencing.FencingStore.Fence;
import dev.leader.fencing.FencingStore.LeaseLock;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.CoordinationStore.AcquireResult;
import dev.leader.lease.LeaseState;
import dev.leader.node.NodeRegistration;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.dao.DuplicateKeyException;
import org.springframework.transaction.IllegalTransactionStateException;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The behaviour every {@link FencingStore} must show, run against the real coordinator. A
 * store passes this suite through a small subclass whose {@link #createStores()} gives,
 * on an empty coordinator (no leases, no fences), the fencing store under test, the
 * {@link CoordinationStore} of the same coordinator (the suite takes leases with it), and
 * the transaction manager whose transactions the fencing store runs in;
 * {@link #destroyStores} removes them again.
 * <p>
 * Both methods of the store run in the caller's transaction and keep their lock until it
 * ends, so the tests run them in transactions of their own, on threads of their own where
 * a transaction must stay open. The concurrency fuzz test races writers with random terms
 * for one fence and checks, exactly, that the terms it accepted rose in the order they
 * committed and that it ends at the highest of them.
 */
public abstract class AbstractFencingStoreContractTests
		extends StoresContract<AbstractFencingStoreContractTests.Stores> {

	private static final String GROUP = "orders";

	private static final String RESOURCE = "ledger";

	private static final NodeRegistration NODE_A = new NodeRegistration("node-a", "a", "host-a", 1);

	private static final NodeRegistration NODE_B = new NodeRegistration("node-b", "b", "host-b", 2);

	private static final Duration LONG = Duration.ofSeconds(10);

	private static final Duration SHORT = Duration.ofMillis(400);

	private static final Duration WAIT = Duration.ofSeconds(10);

	private TransactionTemplate transactions;

	@BeforeEach
	void prepareTransactions() {
		this.transactions = new TransactionTemplate(stores().transactions());
	}

	@Test
	void holderWithItsTermLocksItsUnexpiredLease() {
		LeaseState lease = grant(NODE_A, LONG);
		LeaseLock lock = inTransaction(() -> fencing().lockLease(token(lease.term()), "node-a"));
		assertThat(lock).isEqualTo(new LeaseLock(true, "node-a", lease.term(), true));
	}

	@Test
	void anotherNodeOrAnotherTermLocksNothingAndReadsTheLeaseAsItStands() {
		LeaseState lease = grant(NODE_A, LONG);
		assertThat(inTransaction(() -> fencing().lockLease(token(lease.term()), "node-b")))
			.isEqualTo(new LeaseLock(false, "node-a", lease.term(), true));
		assertThat(inTransaction(() -> fencing().lockLease(token(lease.term() - 1), "node-a")))
			.isEqualTo(new LeaseLock(false, "node-a", lease.term(), true));
		assertThat(inTransaction(() -> fencing().lockLease(token(lease.term() + 1), "node-a")))
			.isEqualTo(new LeaseLock(false, "node-a", lease.term(), true));
	}

	@Test
	void expiredLeaseLocksNothingEvenForItsHolderAndTerm() {
		LeaseState lease = grant(NODE_A, SHORT);
		await().atMost(WAIT).until(() -> coordination().leases().stream().noneMatch(LeaseState::isHeld));
		assertThat(inTransaction(() -> fencing().lockLease(token(lease.term()), "node-a")))
			.isEqualTo(new LeaseLock(false, "node-a", lease.term(), false));
	}

	@Test
	void releasedLeaseLocksNothingAndHasNoHolder() {
		LeaseState lease = grant(NODE_A, LONG);
		coordination().release("node-a", Map.of(GROUP, lease.term()));
		LeaseLock lock = inTransaction(() -> fencing().lockLease(token(lease.term()), "node-a"));
		assertThat(lock).isNotNull();
		assertThat(lock.locked()).isFalse();
		assertThat(lock.holder()).isNull();
		assertThat(lock.term()).isEqualTo(lease.term());
	}

	@Test
	void groupWithoutALeaseHasNothingToLock() {
		assertThat(inTransaction(() -> fencing().lockLease(token(1), "node-a"))).isNull();
	}

	@Test
	void bothMethodsRefuseToRunWithoutATransaction() {
		LeaseState lease = grant(NODE_A, LONG);
		assertThatExceptionOfType(IllegalTransactionStateException.class)
			.isThrownBy(() -> fencing().lockLease(token(lease.term()), "node-a"));
		assertThatExceptionOfType(IllegalTransactionStateException.class)
			.isThrownBy(() -> fencing().advance(RESOURCE, token(lease.term())));
	}

	@Test
	void releaseWaitsForTheTransactionThatLockedTheLeaseButTheHoldersRenewalDoesNot() throws Exception {
		LeaseState lease = grant(NODE_A, LONG);
		CompletableFuture<Void> locked = new CompletableFuture<>();
		CompletableFuture<Void> finish = new CompletableFuture<>();
		CompletableFuture<Void> guarded = CompletableFuture
			.runAsync(() -> this.transactions.executeWithoutResult((status) -> {
				LeaseLock lock = fencing().lockLease(token(lease.term()), "node-a");
				assertThat(lock).extracting(LeaseLock::locked).isEqualTo(true);
				locked.complete(null);
				finish.join();
			}));
		locked.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
		CoordinationStore.Tick renewal = coordination().tick(NODE_A, Map.of(GROUP, lease.term()), List.of(), LONG,
				LONG);
		assertThat(renewal.renewed()).containsKey(GROUP);
		CompletableFuture<Collection<String>> release = CompletableFuture
			.supplyAsync(() -> coordination().release("node-a", Map.of(GROUP, lease.term())));
		await().during(Duration.ofMillis(500)).atMost(WAIT).until(() -> !release.isDone());
		finish.complete(null);
		guarded.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
		assertThat(release.get(WAIT.toMillis(), TimeUnit.MILLISECONDS)).containsExactly(GROUP);
	}

	/**
	 * A node asks for a lease that expired while a guard of its holder's term is still
	 * open, so the grant waits for the guard; meanwhile the node's process goes silent,
	 * and another process takes its node id over. The grant, once the guard ends, goes to
	 * no process: the first one's registration is gone, and the second one never asked.
	 * Granted, both processes would lead the group under the one id until the first one's
	 * next heartbeat failed.
	 */
	@Test
	void grantThatWaitedForAGuardIsRefusedOnceAnotherProcessTookTheNodeIdOver() throws Exception {
		assumeTrue(sharedByProcesses(), "the store serves one process");
		Duration nodeExpiry = Duration.ofMillis(500);
		LeaseState old = grant(NODE_B, SHORT);
		CompletableFuture<Void> locked = new CompletableFuture<>();
		CompletableFuture<Void> finish = new CompletableFuture<>();
		CompletableFuture<Void> guarded = CompletableFuture
			.runAsync(() -> this.transactions.executeWithoutResult((status) -> {
				assertThat(fencing().lockLease(token(old.term()), NODE_B.id())).extracting(LeaseLock::locked)
					.isEqualTo(true);
				locked.complete(null);
				finish.join();
			}));
		try {
			locked.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
			coordination().tick(NODE_A, Map.of(), List.of(), LONG, nodeExpiry);
			await().atMost(WAIT).until(() -> coordination().leases().stream().noneMatch(LeaseState::isHeld));
			CompletableFuture<AcquireResult> waiting = CompletableFuture
				.supplyAsync(() -> coordination().acquire(GROUP, NODE_A, LONG));
			NodeRegistration again = new NodeRegistration(NODE_A.id(), NODE_A.name(), NODE_A.host(), NODE_A.pid() + 1);
			await().atMost(WAIT)
				.pollInterval(Duration.ofMillis(50))
				.ignoreException(DuplicateKeyException.class)
				.until(() -> coordination().tick(again, Map.of(), List.of(), LONG, nodeExpiry), (tick) -> true);
			assertThat(waiting).as("the grant waits for the guard").isNotDone();
			finish.complete(null);
			guarded.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
			AcquireResult result = waiting.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
			assertThat(result.granted()).as("granted to a process whose node id another one took over").isFalse();
			assertThat(coordination().leases()).singleElement()
				.satisfies((lease) -> assertThat(lease.isHeld()).isFalse());
			assertThat(coordination().acquire(GROUP, again, LONG).granted()).isTrue();
		}
		finally {
			finish.complete(null);
		}
	}

	@Test
	void firstAdvanceCreatesTheFenceAtTheTokensTerm() {
		Fence fence = inTransaction(() -> fencing().advance(RESOURCE, token(3)));
		assertThat(fence).isEqualTo(new Fence(true, GROUP, 3));
	}

	@Test
	void fenceAcceptsEqualAndHigherTermsAndRejectsLowerOnes() {
		inTransaction(() -> fencing().advance(RESOURCE, token(3)));
		assertThat(inTransaction(() -> fencing().advance(RESOURCE, token(3)))).isEqualTo(new Fence(true, GROUP, 3));
		assertThat(inTransaction(() -> fencing().advance(RESOURCE, token(5)))).isEqualTo(new Fence(true, GROUP, 5));
		assertThat(inTransaction(() -> fencing().advance(RESOURCE, token(4)))).isEqualTo(new Fence(false, GROUP, 5));
		assertThat(inTransaction(() -> fencing().advance(RESOURCE, token(5)))).isEqualTo(new Fence(true, GROUP, 5));
	}

	@Test
	void fenceOfOneGroupRejectsTheTokensOfAnother() {
		inTransaction(() -> fencing().advance(RESOURCE, token(3)));
		assertThat(inTransaction(() -> fencing().advance(RESOURCE, new FencingToken("billing", 9))))
			.isEqualTo(new Fence(false, GROUP, 3));
	}

	@Test
	void advanceRolledBackWithItsTransactionLeavesTheFenceAsItWas() {
		inTransaction(() -> fencing().advance(RESOURCE, token(3)));
		this.transactions.executeWithoutResult((status) -> {
			assertThat(fencing().advance(RESOURCE, token(7))).isEqualTo(new Fence(true, GROUP, 7));
			status.setRollbackOnly();
		});
		assertThat(inTransaction(() -> fencing().advance(RESOURCE, token(4)))).isEqualTo(new Fence(true, GROUP, 4));
	}

	/**
	 * Writers race for one fence, each in transactions with terms drawn at random, some
	 * of which roll back. While a writer's transaction holds the fence it records the
	 * term the fence accepted, so the record is in commit order; the accepted and
	 * committed terms must never go down in that order, and the fence must end at the
	 * highest committed term.
	 */
	@Test
	void racingWritersLeaveTheFenceAtTheHighestCommittedTermHavingAcceptedTermsOnlyInRisingOrder() throws Exception {
		int writers = 8;
		int attempts = 60;
		CyclicBarrier start = new CyclicBarrier(writers);
		List<Long> committed = new ArrayList<>();
		AtomicInteger rejected = new AtomicInteger();
		ExecutorService executor = Executors.newFixedThreadPool(writers);
		try {
			List<Future<?>> races = new ArrayList<>();
			for (int i = 0; i < writers; i++) {
				Random random = new Random(i);
				races.add(executor.submit(() -> {
					start.await(10, TimeUnit.SECONDS);
					for (int attempt = 0; attempt < attempts; attempt++) {
						long term = 1 + random.nextInt(attempts);
						boolean rollBack = random.nextInt(5) == 0;
						this.transactions.executeWithoutResult((status) -> {
							Fence fence = fencing().advance(RESOURCE, token(term));
							if (fence == null || !fence.advanced()) {
								// Null only while another transaction creates the fence:
								// the write fails closed. The term a rejection reports
								// may be from before the statement waited for the row.
								rejected.incrementAndGet();
							}
							else if (rollBack) {
								status.setRollbackOnly();
							}
							else {
								synchronized (committed) {
									committed.add(term);
								}
							}
						});
					}
					return null;
				}));
			}
			for (Future<?> race : races) {
				race.get(60, TimeUnit.SECONDS);
			}
		}
		finally {
			executor.shutdownNow();
		}
		assertThat(committed).as("terms accepted, in commit order").isSorted().isNotEmpty();
		assertThat(rejected.get()).as("rejected attempts").isPositive();
		long highest = committed.get(committed.size() - 1);
		Fence last = inTransaction(() -> fencing().advance(RESOURCE, token(1)));
		assertThat(last).isEqualTo(new Fence(highest == 1, GROUP, highest));
	}

	private LeaseState grant(NodeRegistration node, Duration duration) {
		return CoordinationContract.grant(coordination(), GROUP, node, duration);
	}

	private <T> @Nullable T inTransaction(Supplier<@Nullable T> action) {
		return this.transactions.execute((TransactionStatus status) -> action.get());
	}

	private static FencingToken token(long term) {
		return new FencingToken(GROUP, term);
	}

	private FencingStore fencing() {
		return stores().fencing();
	}

	private CoordinationStore coordination() {
		return stores().coordination();
	}

	/**
	 * Returns whether processes share the store, so that it tells apart two processes
	 * that register one node id. A store in the memory of its only process returns
	 * {@code false}, and the suite skips the check of a second process with the id.
	 * @return whether processes share the store
	 */
	protected boolean sharedByProcesses() {
		return true;
	}

	/**
	 * The stores of one test, on one coordinator.
	 *
	 * @param coordination the coordination store, which the suite takes and releases
	 * leases with
	 * @param fencing the fencing store under test
	 * @param transactions the transaction manager whose transactions the fencing store
	 * runs in
	 */
	public record Stores(CoordinationStore coordination, FencingStore fencing,
			PlatformTransactionManager transactions) {
	}

}
