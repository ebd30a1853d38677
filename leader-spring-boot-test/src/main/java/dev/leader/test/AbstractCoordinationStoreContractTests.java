package dev.leader.test;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.LongStream;

import dev.leader.NodeInfo;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.CoordinationStore.AcquireResult;
import dev.leader.lease.CoordinationStore.Tick;
import dev.leader.lease.LeaseState;
import dev.leader.node.NodeRegistration;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The behaviour every {@link CoordinationStore} must show, run against the real
 * coordinator. A store passes this suite through a small subclass that creates an empty
 * coordinator for each test ({@link #createStore()}), removes it again
 * ({@link #destroyStore(CoordinationStore)}), and declares whether it announces releases
 * ({@link #supportsReleaseNotifications()}).
 * <p>
 * Expiry is always decided by the coordinator's clock, so the tests that need a lease or
 * a node to expire use short durations and wait for the coordinator to report the expiry,
 * with bounded waits. The concurrency fuzz test races several nodes for one group and
 * checks the guarantee G1 exactly on what the store reported.
 */
public abstract class AbstractCoordinationStoreContractTests {

	private static final String GROUP = "orders";

	private static final Duration LONG = Duration.ofSeconds(10);

	private static final Duration SHORT = Duration.ofMillis(400);

	private static final Duration NODE_EXPIRY = Duration.ofSeconds(10);

	private static final Duration WAIT = Duration.ofSeconds(5);

	private static final Duration POLL = Duration.ofMillis(20);

	private static final NodeRegistration A = new NodeRegistration("node-a", "app-a", "host-a", 101);

	private static final NodeRegistration B = new NodeRegistration("node-b", "app-b", "host-b", 102);

	private static final NodeRegistration C = new NodeRegistration("node-c", "app-c", "host-c", 103);

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
		AcquireResult result = this.store.acquire(GROUP, A.id(), LONG);
		assertThat(result.granted()).isTrue();
		LeaseState lease = result.lease();
		assertThat(lease).isNotNull();
		assertThat(lease.group()).isEqualTo(GROUP);
		assertThat(lease.holder()).isEqualTo(A.id());
		assertThat(lease.term()).isOne();
		assertThat(lease.isHeld()).isTrue();
		assertThat(lease.remaining()).isLessThanOrEqualTo(LONG).isGreaterThan(LONG.minusSeconds(2));
		assertThat(storedLeases()).containsExactly(stored(lease));
	}

	@Test
	void leaseHeldByAnotherNodeIsRefusedWithTheHolderTermAndTimeLeft() {
		LeaseState held = grant(A, LONG);
		AcquireResult refused = this.store.acquire(GROUP, B.id(), LONG);
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
		LeaseState first = grant(A, SHORT);
		assertThat(this.store.acquire(GROUP, B.id(), SHORT).granted()).isFalse();
		AcquireResult takeover = await().atMost(WAIT)
			.pollInterval(POLL)
			.until(() -> this.store.acquire(GROUP, B.id(), LONG), AcquireResult::granted);
		LeaseState lease = takeover.lease();
		assertThat(lease).isNotNull();
		assertThat(lease.holder()).isEqualTo(B.id());
		assertThat(lease.term()).isEqualTo(first.term() + 1);
		assertThat(lease.isHeld()).isTrue();
		assertThat(lease.expiresAt()).isAfter(first.expiresAt());
		AcquireResult formerHolder = this.store.acquire(GROUP, A.id(), LONG);
		assertThat(formerHolder.granted()).isFalse();
		assertThat(formerHolder.lease()).extracting(LeaseState::holder, LeaseState::term)
			.containsExactly(B.id(), lease.term());
	}

	@Test
	void holderReacquiringItsValidLeaseGetsTheNextTermSoThatTwoProcessesWithOneIdNeverShareATerm() {
		LeaseState first = grant(A, LONG);
		LeaseState again = grant(A, LONG);
		assertThat(again.holder()).isEqualTo(A.id());
		assertThat(again.term()).isEqualTo(first.term() + 1);
		assertThat(again.expiresAt()).isAfter(first.expiresAt());
	}

	@Test
	void formerHolderReacquiringItsExpiredLeaseGetsTheNextTerm() {
		LeaseState first = grant(A, SHORT);
		awaitExpiry();
		LeaseState again = grant(A, LONG);
		assertThat(again.holder()).isEqualTo(A.id());
		assertThat(again.term()).isEqualTo(first.term() + 1);
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
		LeaseState first = grant(A, LONG);
		assertThat(this.store.release(A.id(), Map.of(GROUP, first.term()))).containsExactly(GROUP);
		LeaseState second = grant(A, LONG);
		assertThat(second.term()).isEqualTo(first.term() + 1);
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
		assertThat(grant(B, LONG).term()).isEqualTo(held.term() + 1);
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
		assertThat(next.term()).isEqualTo(held.term() + 1);
		assertThat(this.store.release(B.id(), Map.of(GROUP, next.term()))).containsExactly(GROUP);
		assertThat(grant(B, LONG).term()).isEqualTo(next.term() + 1);
	}

	@Test
	void releaseWithAWrongTermOrByANodeThatDoesNotHoldTheLeaseDoesNothing() {
		LeaseState held = grant(A, LONG);
		assertThat(this.store.release(A.id(), Map.of(GROUP, held.term() + 1))).isEmpty();
		assertThat(this.store.release(A.id(), Map.of(GROUP, held.term() - 1))).isEmpty();
		assertThat(this.store.release(B.id(), Map.of(GROUP, held.term()))).isEmpty();
		assertThat(this.store.release(A.id(), Map.of("unknown", held.term()))).isEmpty();
		assertThat(storedLeases()).containsExactly(stored(held));
		assertThat(this.store.acquire(GROUP, B.id(), LONG).granted()).isFalse();
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
		List<Long> terms = new ArrayList<>();
		grant(A, LONG);
		terms.add(currentTerm());
		grant(A, LONG);
		terms.add(currentTerm());
		assertThat(this.store.acquire(GROUP, B.id(), LONG).granted()).isFalse();
		terms.add(currentTerm());
		this.store.release(A.id(), Map.of(GROUP, 1L));
		terms.add(currentTerm());
		this.store.release(A.id(), Map.of(GROUP, 2L));
		terms.add(currentTerm());
		grant(B, SHORT);
		terms.add(currentTerm());
		assertThat(this.store.acquire(GROUP, A.id(), LONG).granted()).isFalse();
		terms.add(currentTerm());
		awaitExpiry();
		grant(A, LONG);
		terms.add(currentTerm());
		this.store.tick(B, Map.of(GROUP, 3L), List.of(), LONG, NODE_EXPIRY);
		terms.add(currentTerm());
		this.store.release(B.id(), Map.of(GROUP, 3L));
		terms.add(currentTerm());
		this.store.release(A.id(), Map.of(GROUP, 4L));
		terms.add(currentTerm());
		grant(A, LONG);
		terms.add(currentTerm());
		assertThat(terms).isSorted().containsExactly(1L, 2L, 2L, 2L, 2L, 3L, 3L, 4L, 4L, 4L, 4L, 5L);
	}

	@Test
	void tickRegistersTheNodeAndReturnsTheMembersWithTheirLiveness() {
		Tick first = this.store.tick(A, Map.of(), List.of(), LONG, NODE_EXPIRY);
		assertThat(first.members()).singleElement().satisfies((member) -> {
			assertThat(member.id()).isEqualTo(A.id());
			assertThat(member.name()).isEqualTo(A.name());
			assertThat(member.host()).isEqualTo(A.host());
			assertThat(member.pid()).isEqualTo(A.pid());
			assertThat(member.heartbeatAt()).isAfterOrEqualTo(member.startedAt());
			assertThat(member.alive()).isTrue();
		});
		NodeInfo registered = first.members().get(0);
		Tick second = this.store.tick(B, Map.of(), List.of(), LONG, NODE_EXPIRY);
		assertThat(second.members()).extracting(NodeInfo::id, NodeInfo::alive)
			.containsExactlyInAnyOrder(tuple(A.id(), true), tuple(B.id(), true));
		Tick third = this.store.tick(A, Map.of(), List.of(), LONG, NODE_EXPIRY);
		assertThat(third.members()).filteredOn(NodeInfo::id, A.id()).singleElement().satisfies((member) -> {
			assertThat(member.startedAt()).isEqualTo(registered.startedAt());
			assertThat(member.heartbeatAt()).isAfter(registered.heartbeatAt());
		});
	}

	@Test
	void nodeSilentPastTheNodeExpiryIsNotAliveAndIsForgottenAfterTwiceTheExpiry() {
		Duration nodeExpiry = Duration.ofMillis(500);
		NodeInfo silent = this.store.tick(A, Map.of(), List.of(), LONG, nodeExpiry).members().get(0);
		assertThat(member(this.store.tick(B, Map.of(), List.of(), LONG, nodeExpiry), A.id())).isNotNull()
			.extracting(NodeInfo::alive)
			.isEqualTo(true);
		NodeInfo dead = await().atMost(WAIT).pollInterval(POLL).until(() -> {
			Tick tick = this.store.tick(B, Map.of(), List.of(), LONG, nodeExpiry);
			assertThat(member(tick, B.id())).extracting(NodeInfo::alive).isEqualTo(true);
			return member(tick, A.id());
		}, (member) -> member != null && !member.alive());
		assertThat(dead.heartbeatAt()).isEqualTo(silent.heartbeatAt());
		await().atMost(WAIT).pollInterval(POLL).untilAsserted(() -> {
			Tick tick = this.store.tick(B, Map.of(), List.of(), LONG, nodeExpiry);
			assertThat(tick.members()).extracting(NodeInfo::id).containsExactly(B.id());
		});
	}

	@Test
	void deregisteredNodeLeavesTheMembersAtOnceAndRejoinsOnItsNextTick() {
		this.store.tick(A, Map.of(), List.of(), LONG, NODE_EXPIRY);
		this.store.tick(B, Map.of(), List.of(), LONG, NODE_EXPIRY);
		this.store.deregister(A.id());
		assertThat(this.store.tick(B, Map.of(), List.of(), LONG, NODE_EXPIRY).members()).extracting(NodeInfo::id)
			.containsExactly(B.id());
		this.store.deregister("never-registered");
		this.store.tick(A, Map.of(), List.of(), LONG, NODE_EXPIRY);
		assertThat(this.store.tick(B, Map.of(), List.of(), LONG, NODE_EXPIRY).members()).extracting(NodeInfo::id)
			.containsExactlyInAnyOrder(A.id(), B.id());
	}

	@Test
	void releaseWakesListenersWithTheGroupNameAndTheLongestRunningOtherNode() throws Exception {
		assumeTrue(supportsReleaseNotifications(), "store announces releases");
		for (NodeRegistration node : List.of(A, B, C)) {
			this.store.tick(node, Map.of(), List.of(), LONG, NODE_EXPIRY);
		}
		List<String> woken = new CopyOnWriteArrayList<>();
		Map<String, String> successors = new ConcurrentHashMap<>();
		try (AutoCloseable listening = this.store.listen((group, successor) -> {
			woken.add(group);
			successors.put(group, String.valueOf(successor));
		})) {
			// A listener may start listening after listen() returns, so release until one
			// arrives.
			await().atMost(WAIT).pollInterval(Duration.ofMillis(100)).until(() -> {
				LeaseState warmUp = grant("warm-up", A, LONG);
				this.store.release(A.id(), Map.of("warm-up", warmUp.term()));
				return woken.contains("warm-up");
			});
			LeaseState kept = grant("kept", A, LONG);
			assertThat(this.store.release(A.id(), Map.of("kept", kept.term() + 1))).isEmpty();
			assertThat(this.store.release(B.id(), Map.of("kept", kept.term()))).isEmpty();
			LeaseState released = grant(A, LONG);
			assertThat(this.store.release(A.id(), Map.of(GROUP, released.term()))).containsExactly(GROUP);
			await().atMost(WAIT).until(() -> woken.contains(GROUP));
			// Wake-ups come in release order, so the refused releases before would have
			// shown up by now.
			assertThat(woken).filteredOn((group) -> !group.equals("warm-up")).containsExactly(GROUP);
			assertThat(successors).containsEntry(GROUP, B.id());
			LeaseState second = grant("second", B, LONG);
			this.store.release(B.id(), Map.of("second", second.term()));
			await().atMost(WAIT).until(() -> woken.contains("second"));
			assertThat(successors).containsEntry("second", A.id());
		}
	}

	/**
	 * Nodes race for one group: acquiring, renewing, releasing, and sometimes abandoning
	 * a short lease to let it expire. Every successful call is recorded with what the
	 * store answered, and the history must show that each term had one holder, that terms
	 * were handed out one by one, and that on the coordinator's clock a new term only
	 * started once the previous one was released, repeated by its holder (which grants
	 * the next term) or had expired.
	 */
	@Test
	void racingNodesEachGetTheirOwnTermAndNeverOverlap() throws Exception {
		int nodes = 8;
		CyclicBarrier start = new CyclicBarrier(nodes);
		Set<Long> released = ConcurrentHashMap.newKeySet();
		ExecutorService executor = Executors.newFixedThreadPool(nodes);
		List<Grant> grants = new ArrayList<>();
		try {
			List<Future<List<Grant>>> races = new ArrayList<>();
			for (int i = 0; i < nodes; i++) {
				NodeRegistration node = new NodeRegistration("racer-" + i, "racer", "host-" + i, i);
				long seed = i;
				races.add(executor.submit(() -> race(node, new Random(seed), start, released)));
			}
			for (Future<List<Grant>> race : races) {
				List<Grant> ownGrants = race.get(30, TimeUnit.SECONDS);
				assertThat(ownGrants).extracting(Grant::term).as("terms granted to one node, in order").isSorted();
				grants.addAll(ownGrants);
			}
		}
		finally {
			executor.shutdownNow();
		}
		Map<Long, Set<String>> holders = grants.stream()
			.collect(Collectors.groupingBy(Grant::term, TreeMap::new,
					Collectors.mapping(Grant::node, Collectors.toCollection(TreeSet::new))));
		assertThat(holders)
			.allSatisfy((term, nodesOfTerm) -> assertThat(nodesOfTerm).as("holders of term " + term).hasSize(1));
		assertThat(holders.size()).as("distinct terms granted").isGreaterThanOrEqualTo(3 * nodes);
		assertThat(grants.stream().map(Grant::node).distinct()).as("nodes that won").hasSizeGreaterThan(1);
		long finalTerm = this.store.leases().get(0).term();
		assertThat(holders.keySet()).as("terms granted")
			.containsExactlyElementsOf(LongStream.rangeClosed(1, finalTerm).boxed().toList());
		assertRenewalsFollowTermOrder(grants);
		assertNewTermsStartAfterUnreleasedTermsExpire(grants, released);
	}

	/**
	 * One racing node: a bounded number of attempts, each an acquire that, when granted,
	 * is sometimes repeated, then renewed up to three times and released, or abandoned to
	 * expire.
	 * @param node the racing node
	 * @param random the source of the node's choices
	 * @param start the barrier at which all the racing nodes start
	 * @param released collects the terms that were released
	 * @return the grants and the renewals of the node
	 */
	private List<Grant> race(NodeRegistration node, Random random, CyclicBarrier start, Set<Long> released)
			throws Exception {
		List<Grant> grants = new ArrayList<>();
		start.await(10, TimeUnit.SECONDS);
		for (int attempt = 0; attempt < 300; attempt++) {
			// Abandoned leases are short so that the others do not wait long for them to
			// expire.
			boolean abandon = random.nextInt(4) == 0;
			Duration duration = abandon ? Duration.ofMillis(30) : Duration.ofMillis(300);
			AcquireResult result = this.store.acquire(GROUP, node.id(), duration);
			if (!result.granted()) {
				continue;
			}
			LeaseState lease = granted(result, node);
			grants.add(new Grant(node.id(), lease.term(), lease.expiresAt(), null));
			if (random.nextInt(4) == 0) {
				result = this.store.acquire(GROUP, node.id(), duration);
				if (!result.granted()) {
					continue;
				}
				lease = granted(result, node);
				grants.add(new Grant(node.id(), lease.term(), lease.expiresAt(), null));
			}
			long term = lease.term();
			for (int renewal = random.nextInt(3); renewal >= 0; renewal--) {
				Tick tick = this.store.tick(node, Map.of(GROUP, term), List.of(), duration, NODE_EXPIRY);
				LeaseState renewed = tick.renewed().get(GROUP);
				if (renewed == null) {
					break;
				}
				assertThat(renewed.term()).isEqualTo(term);
				grants.add(new Grant(node.id(), term, renewed.expiresAt(), renewed.expiresAt().minus(duration)));
			}
			if (!abandon && this.store.release(node.id(), Map.of(GROUP, term)).contains(GROUP)) {
				released.add(term);
			}
		}
		return grants;
	}

	private static LeaseState granted(AcquireResult result, NodeRegistration node) {
		LeaseState lease = result.lease();
		assertThat(lease).isNotNull();
		assertThat(lease.holder()).isEqualTo(node.id());
		return lease;
	}

	/**
	 * A renewal happens at a single instant of the coordinator's clock, the expiry it
	 * sets minus the duration, while its term is current. Ordered by those instants,
	 * terms must never go down, and a change of holder must come with a higher term.
	 * @param grants the grants and the renewals of every node
	 */
	private void assertRenewalsFollowTermOrder(List<Grant> grants) {
		List<Grant> renewals = grants.stream()
			.filter((grant) -> grant.renewedAt() != null)
			.sorted(Comparator.comparing(Grant::renewedAt))
			.toList();
		assertThat(renewals).as("renewals").hasSizeGreaterThan(grants.size() / 4);
		for (int i = 1; i < renewals.size(); i++) {
			Grant before = renewals.get(i - 1);
			Grant after = renewals.get(i);
			assertThat(after.term()).as("term renewed after %s", before).isGreaterThanOrEqualTo(before.term());
			if (!after.node().equals(before.node())) {
				assertThat(after.term()).as("term of a new holder after %s", before).isGreaterThan(before.term());
			}
		}
	}

	/**
	 * A term that was not released lasts until the last expiry the coordinator gave it,
	 * unless its holder was granted the next term, which ends it; no later term may be
	 * renewed before then.
	 * @param grants the grants and the renewals of every node
	 * @param released the terms that were released
	 */
	private void assertNewTermsStartAfterUnreleasedTermsExpire(List<Grant> grants, Set<Long> released) {
		Map<Long, String> holders = new HashMap<>();
		grants.forEach((grant) -> holders.put(grant.term(), grant.node()));
		Map<Long, Instant> lastExpiry = new HashMap<>();
		grants.stream()
			.filter((grant) -> !grant.node().equals(holders.get(grant.term() + 1)))
			.forEach((grant) -> lastExpiry.merge(grant.term(), grant.expiresAt(),
					(one, other) -> one.isAfter(other) ? one : other));
		for (Grant renewal : grants) {
			if (renewal.renewedAt() == null) {
				continue;
			}
			lastExpiry.forEach((term, expiry) -> {
				if (term < renewal.term() && !released.contains(term)) {
					assertThat(renewal.renewedAt()).as("renewal of term %d after term %d expired", renewal.term(), term)
						.isAfterOrEqualTo(expiry);
				}
			});
		}
	}

	private LeaseState grant(NodeRegistration node, Duration duration) {
		return grant(GROUP, node, duration);
	}

	private LeaseState grant(String group, NodeRegistration node, Duration duration) {
		AcquireResult result = this.store.acquire(group, node.id(), duration);
		assertThat(result.granted()).as("%s granted to %s", group, node.id()).isTrue();
		assertThat(result.lease()).isNotNull();
		return result.lease();
	}

	private void awaitExpiry() {
		await().atMost(WAIT).pollInterval(POLL).until(() -> this.store.leases().stream().noneMatch(LeaseState::isHeld));
	}

	private long currentTerm() {
		List<LeaseState> leases = this.store.leases();
		assertThat(leases).hasSize(1);
		return leases.get(0).term();
	}

	private static @Nullable NodeInfo member(Tick tick, String id) {
		return tick.members().stream().filter((member) -> member.id().equals(id)).findFirst().orElse(null);
	}

	private static StoredLease stored(LeaseState lease) {
		return new StoredLease(lease.group(), lease.holder(), lease.term(), lease.expiresAt());
	}

	private List<StoredLease> storedLeases() {
		return this.store.leases().stream().map(AbstractCoordinationStoreContractTests::stored).toList();
	}

	/**
	 * What a lease records, without the time left that depends on when it was read.
	 */
	private record StoredLease(String group, @Nullable String holder, long term, Instant expiresAt) {

	}

	/**
	 * A successful acquire or renewal as the store answered it.
	 *
	 * @param node the node that got the lease
	 * @param term the term
	 * @param expiresAt the expiry the store set
	 * @param renewedAt for a renewal, the instant of the coordinator's clock at which it
	 * happened
	 */
	private record Grant(String node, long term, Instant expiresAt, @Nullable Instant renewedAt) {

	}

}
