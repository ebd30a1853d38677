package dev.leader.test;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

import dev.leader.lease.CoordinationStore;
import dev.leader.lease.CoordinationStore.AcquireResult;
import dev.leader.lease.CoordinationStore.Tick;
import dev.leader.lease.LeaseState;
import dev.leader.node.NodeRegistration;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

/**
 * The behaviour every {@link CoordinationStore} must show, run against the real
 * coordinator. A store passes this suite through a small subclass that creates an empty
 * coordinator for each test ({@link #createStore()}), removes it again
 * ({@link #destroyStore(CoordinationStore)}), and declares whether it announces releases
 * ({@link #supportsReleaseNotifications()}).
 * <p>
 * Expiry is always decided by the coordinator's clock, so the tests that need a lease or
 * a node to expire use short durations and wait for the coordinator to report the expiry,
 * with bounded waits. The tests of leases come first; the tests of membership and the
 * concurrency fuzz test, which races several nodes for one group and checks the guarantee
 * G1 exactly on what the store reported, are groups of their own.
 */
public abstract class AbstractCoordinationStoreContractTests extends CoordinationContract {

	private CoordinationStore store;

	/**
	 * Creates the store under test on an empty coordinator: no leases and no nodes.
	 * Called before each test.
	 * @return the store
	 * @throws Exception if the coordinator cannot be prepared
	 */
	protected abstract CoordinationStore createStore() throws Exception;

	/**
	 * Removes what {@link #createStore()} set up. Called after each test.
	 * @param store the store of the test
	 * @throws Exception if the coordinator cannot be cleaned up
	 */
	protected void destroyStore(CoordinationStore store) throws Exception {
	}

	/**
	 * Returns whether the store wakes {@link CoordinationStore#listen listeners} when a
	 * lease is released. Stores that do must deliver the wake-ups of one listener in the
	 * order the releases happened.
	 * @return whether releases are announced
	 */
	protected boolean supportsReleaseNotifications() {
		return false;
	}

	/**
	 * Returns whether the store's terms start at 1 and rise by exactly one with every
	 * grant, as a counter of the store's own does. A store whose term is a revision of
	 * the whole coordinator, such as etcd's create revision of the lease key, returns
	 * {@code false}: its terms only rise strictly, and the suite checks that instead.
	 * @return whether terms rise by one
	 */
	protected boolean termsRiseByOne() {
		return true;
	}

	/**
	 * Returns whether processes share the store, so that it tells apart two processes
	 * that register one node id. A store in the memory of its only process returns
	 * {@code false}, and the suite skips the checks of a second process with the id.
	 * @return whether processes share the store
	 */
	protected boolean sharedByProcesses() {
		return true;
	}

	@BeforeEach
	void prepareStore() throws Exception {
		this.store = createStore();
	}

	@AfterEach
	void cleanUpStore() throws Exception {
		destroyStore(this.store);
	}

	@Test
	void freeLeaseIsGrantedWithTermOneForTheWholeDuration() {
		AcquireResult result = acquire(this.store, GROUP, A, LONG);
		assertThat(result.granted()).isTrue();
		LeaseState lease = result.lease();
		assertThat(lease).isNotNull();
		assertThat(lease.group()).isEqualTo(GROUP);
		assertThat(lease.holder()).isEqualTo(A.id());
		assertFirstTerm(lease.term());
		assertThat(lease.isHeld()).isTrue();
		assertThat(lease.remaining()).isLessThanOrEqualTo(LONG).isGreaterThan(LONG.minusSeconds(2));
		assertThat(storedLeases()).containsExactly(stored(lease));
	}

	@Test
	void nodeThatThisProcessHasNotRegisteredIsRefusedALease() {
		assertThat(this.store.acquire(GROUP, C, LONG).granted()).isFalse();
		assertThat(this.store.leases()).noneMatch(LeaseState::isHeld);
		assertThat(acquire(this.store, GROUP, C, LONG).granted()).isTrue();
	}

	@Test
	void leaseHeldByAnotherNodeIsRefusedWithTheHolderTermAndTimeLeft() {
		LeaseState held = grant(A, LONG);
		AcquireResult refused = acquire(this.store, GROUP, B, LONG);
		assertThat(refused.granted()).isFalse();
		LeaseState lease = refused.lease();
		assertThat(lease).isNotNull();
		assertThat(lease.holder()).isEqualTo(A.id());
		assertThat(lease.term()).isEqualTo(held.term());
		assertThat(lease.expiresAt()).isEqualTo(held.expiresAt());
		assertThat(lease.remaining()).isPositive().isLessThanOrEqualTo(held.remaining());
		assertThat(lease.isHeld()).isTrue();
		assertThat(storedLeases()).containsExactly(stored(held));
	}

	@Test
	void expiredLeaseIsTakenOverWithTheNextTerm() {
		LeaseState first = grant(A, CONTESTED);
		assertThat(acquire(this.store, GROUP, B, SHORT).granted()).isFalse();
		AcquireResult takeover = await().atMost(WAIT)
			.pollInterval(POLL)
			.until(() -> acquire(this.store, GROUP, B, LONG), AcquireResult::granted);
		LeaseState lease = takeover.lease();
		assertThat(lease).isNotNull();
		assertThat(lease.holder()).isEqualTo(B.id());
		assertNextTerm(lease.term(), first.term());
		assertThat(lease.isHeld()).isTrue();
		assertThat(lease.expiresAt()).isAfter(first.expiresAt());
		AcquireResult formerHolder = acquire(this.store, GROUP, A, LONG);
		assertThat(formerHolder.granted()).isFalse();
		assertThat(formerHolder.lease()).extracting(LeaseState::holder, LeaseState::term)
			.containsExactly(B.id(), lease.term());
	}

	@Test
	void holderReacquiringItsValidLeaseGetsTheNextTermSoThatTwoProcessesWithOneIdNeverShareATerm() {
		LeaseState first = grant(A, LONG);
		LeaseState again = grant(A, LONG);
		assertThat(again.holder()).isEqualTo(A.id());
		assertNextTerm(again.term(), first.term());
		assertThat(again.expiresAt()).isAfter(first.expiresAt());
	}

	@Test
	void formerHolderReacquiringItsExpiredLeaseGetsTheNextTerm() {
		LeaseState first = grant(A, SHORT);
		awaitExpiry();
		LeaseState again = grant(A, LONG);
		assertThat(again.holder()).isEqualTo(A.id());
		assertNextTerm(again.term(), first.term());
	}

	@Test
	void tickRenewsEveryLeaseTheNodeHoldsWithItsTerm() {
		LeaseState orders = grant(A, LONG);
		LeaseState billing = grant("billing", A, LONG);
		LeaseState othersLease = grant("reports", B, LONG);
		Tick tick = this.store.tick(A, Map.of(GROUP, orders.term(), "billing", billing.term()), List.of(), LONG,
				NODE_EXPIRY);
		assertThat(tick.renewed()).containsOnlyKeys(GROUP, "billing");
		LeaseState renewed = tick.renewed().get(GROUP);
		assertThat(renewed.holder()).isEqualTo(A.id());
		assertThat(renewed.term()).isEqualTo(orders.term());
		assertThat(renewed.expiresAt()).isAfter(orders.expiresAt());
		assertThat(renewed.remaining()).isLessThanOrEqualTo(LONG).isGreaterThan(LONG.minusSeconds(2));
		assertThat(tick.renewed().get("billing").expiresAt()).isAfter(billing.expiresAt());
		assertThat(storedLeases()).containsExactlyInAnyOrder(stored(renewed), stored(tick.renewed().get("billing")),
				stored(othersLease));
	}

	@Test
	void tickDoesNotRenewALeaseHeldByAnotherNode() {
		LeaseState held = grant(A, LONG);
		Tick tick = this.store.tick(B, Map.of(GROUP, held.term()), List.of(), LONG, NODE_EXPIRY);
		assertThat(tick.renewed()).isEmpty();
		assertThat(storedLeases()).containsExactly(stored(held));
	}

	@Test
	void tickDoesNotRenewALeaseWithAStaleTerm() {
		// Registered first, as a node is before it asks for a lease: the registration of
		// a process is refused while leases it was not granted are valid under its id.
		this.store.tick(A, Map.of(), List.of(), LONG, NODE_EXPIRY);
		LeaseState first = grant(A, LONG);
		assertThat(this.store.release(A.id(), Map.of(GROUP, first.term()))).containsExactly(GROUP);
		LeaseState second = grant(A, LONG);
		assertNextTerm(second.term(), first.term());
		Tick stale = this.store.tick(A, Map.of(GROUP, first.term()), List.of(), LONG, NODE_EXPIRY);
		assertThat(stale.renewed()).isEmpty();
		Tick ahead = this.store.tick(A, Map.of(GROUP, second.term() + 1), List.of(), LONG, NODE_EXPIRY);
		assertThat(ahead.renewed()).isEmpty();
		assertThat(storedLeases()).containsExactly(stored(second));
	}

	@Test
	void tickDoesNotRenewAnExpiredLease() {
		LeaseState held = grant(A, SHORT);
		awaitExpiry();
		Tick tick = this.store.tick(A, Map.of(GROUP, held.term()), List.of(), LONG, NODE_EXPIRY);
		assertThat(tick.renewed()).isEmpty();
		assertThat(this.store.leases()).singleElement().satisfies((lease) -> {
			assertThat(lease.expiresAt()).isEqualTo(held.expiresAt());
			assertThat(lease.isHeld()).isFalse();
		});
		assertNextTerm(grant(B, LONG).term(), held.term());
	}

	@Test
	void tickReadsTheLeasesOfTheRequestedGroups() {
		LeaseState orders = grant(A, LONG);
		LeaseState billing = grant("billing", B, LONG);
		Tick tick = this.store.tick(C, Map.of(), List.of(GROUP, "billing", "unknown"), LONG, NODE_EXPIRY);
		assertThat(tick.renewed()).isEmpty();
		assertThat(tick.leases()).containsOnlyKeys(GROUP, "billing");
		assertThat(stored(tick.leases().get(GROUP))).isEqualTo(stored(orders));
		assertThat(stored(tick.leases().get("billing"))).isEqualTo(stored(billing));
		assertThat(tick.leases().get(GROUP).remaining()).isPositive().isLessThanOrEqualTo(LONG);
	}

	@Test
	void releaseClearsTheHolderKeepsTheTermAndLetsAnyNodeTakeTheNextTermAtOnce() {
		LeaseState held = grant(A, LONG);
		assertThat(this.store.release(A.id(), Map.of(GROUP, held.term()))).containsExactly(GROUP);
		assertThat(this.store.leases()).singleElement().satisfies((lease) -> {
			assertThat(lease.holder()).isNull();
			assertThat(lease.term()).isEqualTo(held.term());
			assertThat(lease.isHeld()).isFalse();
		});
		assertThat(this.store.release(A.id(), Map.of(GROUP, held.term()))).isEmpty();
		LeaseState next = grant(B, LONG);
		assertThat(next.holder()).isEqualTo(B.id());
		assertNextTerm(next.term(), held.term());
		assertThat(this.store.release(B.id(), Map.of(GROUP, next.term()))).containsExactly(GROUP);
		assertNextTerm(grant(B, LONG).term(), next.term());
	}

	@Test
	void handOverGivesTheLeaseUpAndTheNextNodeTakesTheNextTerm() {
		this.store.tick(B, Map.of(), List.of(), LONG, NODE_EXPIRY);
		LeaseState held = grant(A, LONG);
		assertThat(this.store.handOver(A.id(), Map.of(GROUP, held.term() + 1))).isEmpty();
		assertThat(this.store.handOver(A.id(), Map.of(GROUP, held.term()))).containsExactly(GROUP);
		assertThat(this.store.handOver(A.id(), Map.of(GROUP, held.term()))).isEmpty();
		assertThat(this.store.tick(A, Map.of(GROUP, held.term()), List.of(), LONG, NODE_EXPIRY).renewed()).isEmpty();
		LeaseState next = grant(B, LONG);
		assertThat(next.holder()).isEqualTo(B.id());
		assertNextTerm(next.term(), held.term());
		assertThat(storedLeases()).containsExactly(stored(next));
	}

	@Test
	void releaseWithAWrongTermOrByANodeThatDoesNotHoldTheLeaseDoesNothing() {
		LeaseState held = grant(A, LONG);
		assertThat(this.store.release(A.id(), Map.of(GROUP, held.term() + 1))).isEmpty();
		assertThat(this.store.release(A.id(), Map.of(GROUP, held.term() - 1))).isEmpty();
		assertThat(this.store.release(B.id(), Map.of(GROUP, held.term()))).isEmpty();
		assertThat(this.store.release(A.id(), Map.of("unknown", held.term()))).isEmpty();
		assertThat(storedLeases()).containsExactly(stored(held));
		assertThat(acquire(this.store, GROUP, B, LONG).granted()).isFalse();
	}

	@Test
	void releaseOfSeveralLeasesReleasesOnlyThoseHeldWithTheGivenTerms() {
		LeaseState orders = grant(A, LONG);
		LeaseState billing = grant("billing", A, LONG);
		LeaseState reports = grant("reports", B, LONG);
		Collection<String> released = this.store.release(A.id(),
				Map.of(GROUP, orders.term(), "billing", billing.term() + 1, "reports", reports.term()));
		assertThat(released).containsExactly(GROUP);
		assertThat(this.store.leases()).extracting(LeaseState::group, LeaseState::holder, LeaseState::term)
			.containsExactlyInAnyOrder(tuple(GROUP, null, orders.term()), tuple("billing", A.id(), billing.term()),
					tuple("reports", B.id(), reports.term()));
		assertThat(storedLeases()).contains(stored(billing), stored(reports));
	}

	@Test
	void termsNeverDecreaseAcrossAcquireReleaseAndExpiry() {
		List<Long> granted = new ArrayList<>();
		List<Runnable> steps = List.of(() -> granted.add(grant(A, LONG).term()),
				() -> granted.add(grant(A, LONG).term()),
				() -> assertThat(acquire(this.store, GROUP, B, LONG).granted()).isFalse(),
				() -> this.store.release(A.id(), Map.of(GROUP, granted.get(0))),
				() -> this.store.release(A.id(), Map.of(GROUP, granted.get(1))),
				() -> granted.add(grant(B, CONTESTED).term()),
				() -> assertThat(acquire(this.store, GROUP, A, LONG).granted()).isFalse(), () -> {
					awaitExpiry();
					granted.add(grant(A, LONG).term());
				}, () -> this.store.tick(B, Map.of(GROUP, granted.get(2)), List.of(), LONG, NODE_EXPIRY),
				() -> this.store.release(B.id(), Map.of(GROUP, granted.get(2))),
				() -> this.store.release(A.id(), Map.of(GROUP, granted.get(3))),
				() -> granted.add(grant(A, LONG).term()));
		List<Long> terms = new ArrayList<>();
		for (Runnable step : steps) {
			step.run();
			terms.add(currentTerm());
		}
		assertThat(terms).isSorted();
		if (termsRiseByOne()) {
			assertThat(terms).containsExactly(1L, 2L, 2L, 2L, 2L, 3L, 3L, 4L, 4L, 4L, 4L, 5L);
		}
		else {
			assertThat(terms).containsExactly(granted.get(0), granted.get(1), granted.get(1), granted.get(1),
					granted.get(1), granted.get(2), granted.get(2), granted.get(3), granted.get(3), granted.get(3),
					granted.get(3), granted.get(4));
			assertThat(granted).doesNotHaveDuplicates().isSorted();
		}
	}

	private void assertFirstTerm(long term) {
		if (termsRiseByOne()) {
			assertThat(term).isOne();
		}
		else {
			assertThat(term).isPositive();
		}
	}

	private void assertNextTerm(long next, long previous) {
		if (termsRiseByOne()) {
			assertThat(next).isEqualTo(previous + 1);
		}
		else {
			assertThat(next).isGreaterThan(previous);
		}
	}

	private LeaseState grant(NodeRegistration node, Duration duration) {
		return grant(GROUP, node, duration);
	}

	private LeaseState grant(String group, NodeRegistration node, Duration duration) {
		return grant(this.store, group, node, duration);
	}

	private void awaitExpiry() {
		await().atMost(WAIT).pollInterval(POLL).until(() -> this.store.leases().stream().noneMatch(LeaseState::isHeld));
	}

	private long currentTerm() {
		List<LeaseState> leases = this.store.leases();
		assertThat(leases).hasSize(1);
		return leases.get(0).term();
	}

	private static StoredLease stored(LeaseState lease) {
		return new StoredLease(lease.group(), lease.holder(), lease.term(), lease.expiresAt());
	}

	private List<StoredLease> storedLeases() {
		return this.store.leases().stream().map(AbstractCoordinationStoreContractTests::stored).toList();
	}

	/**
	 * Returns the store of the running test, for the groups of tests: they are created
	 * before {@link #createStore()} is called.
	 * @return the store of the test that runs when it is called
	 */
	private Supplier<CoordinationStore> storeOfTheTest() {
		return () -> this.store;
	}

	/**
	 * What a lease records, without the time left that depends on when it was read.
	 */
	private record StoredLease(String group, @Nullable String holder, long term, Instant expiresAt) {

	}

	/**
	 * How a store registers nodes, tells which are alive, forgets them, and names the
	 * successor it wakes listeners with when a lease is released.
	 */
	@Nested
	class Membership extends CoordinationMembershipContract {

		Membership() {
			super(storeOfTheTest(), AbstractCoordinationStoreContractTests.this::supportsReleaseNotifications,
					AbstractCoordinationStoreContractTests.this::sharedByProcesses);
		}

	}

	/**
	 * Nodes racing for one group, each with its own terms, which never overlap.
	 */
	@Nested
	class RacingNodes extends CoordinationRaceContract {

		RacingNodes() {
			super(storeOfTheTest(), AbstractCoordinationStoreContractTests.this::termsRiseByOne);
		}

	}

}
