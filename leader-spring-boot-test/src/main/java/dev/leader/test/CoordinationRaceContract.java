package dev.leader.test;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import java.util.stream.LongStream;

import dev.leader.lease.CoordinationStore;
import dev.leader.lease.CoordinationStore.AcquireResult;
import dev.leader.lease.CoordinationStore.Tick;
import dev.leader.lease.LeaseState;
import dev.leader.node.NodeRegistration;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The concurrency fuzz test of {@link AbstractCoordinationStoreContractTests}: several
 * nodes race for one group, and the guarantee G1 is checked exactly on what the
 * {@link CoordinationStore} reported to them.
 */
abstract class CoordinationRaceContract extends CoordinationContract {

	private final Supplier<CoordinationStore> store;

	private final BooleanSupplier termsRiseByOne;

	/**
	 * Creates the test of the store of the enclosing suite.
	 * @param store the store of the running test
	 * @param termsRiseByOne whether the store's terms rise by one, or only strictly
	 */
	CoordinationRaceContract(Supplier<CoordinationStore> store, BooleanSupplier termsRiseByOne) {
		this.store = store;
		this.termsRiseByOne = termsRiseByOne;
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
		TreeMap<Long, Set<String>> holders = grants.stream()
			.collect(Collectors.groupingBy(Grant::term, TreeMap::new,
					Collectors.mapping(Grant::node, Collectors.toCollection(TreeSet::new))));
		assertThat(holders)
			.allSatisfy((term, nodesOfTerm) -> assertThat(nodesOfTerm).as("holders of term " + term).hasSize(1));
		assertThat(holders.size()).as("distinct terms granted").isGreaterThanOrEqualTo(3 * nodes);
		assertThat(grants.stream().map(Grant::node).distinct()).as("nodes that won").hasSizeGreaterThan(1);
		long finalTerm = this.store.get().leases().get(0).term();
		if (this.termsRiseByOne.getAsBoolean()) {
			assertThat(holders.keySet()).as("terms granted")
				.containsExactlyElementsOf(LongStream.rangeClosed(1, finalTerm).boxed().toList());
		}
		else {
			assertThat(holders.lastKey()).as("last term granted").isEqualTo(finalTerm);
		}
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
		CoordinationStore store = this.store.get();
		List<Grant> grants = new ArrayList<>();
		store.tick(node, Map.of(), List.of(), LONG, NODE_EXPIRY);
		start.await(10, TimeUnit.SECONDS);
		for (int attempt = 0; attempt < 300; attempt++) {
			// Paced, so that a store that refuses a lease held by another without a round
			// trip, from the keys it follows, does not spend its attempts in an instant.
			TimeUnit.MICROSECONDS.sleep(500 + random.nextInt(1000));
			// Abandoned leases are short so that the others do not wait long for them to
			// expire.
			boolean abandon = random.nextInt(4) == 0;
			Duration duration = abandon ? Duration.ofMillis(30) : Duration.ofMillis(300);
			AcquireResult result = store.acquire(GROUP, node, duration);
			if (!result.granted()) {
				continue;
			}
			LeaseState lease = granted(result, node);
			grants.add(new Grant(node.id(), lease.term(), lease.expiresAt(), null));
			if (random.nextInt(4) == 0) {
				result = store.acquire(GROUP, node, duration);
				if (!result.granted()) {
					continue;
				}
				lease = granted(result, node);
				grants.add(new Grant(node.id(), lease.term(), lease.expiresAt(), null));
			}
			long term = lease.term();
			for (int renewal = random.nextInt(3); renewal >= 0; renewal--) {
				Tick tick = store.tick(node, Map.of(GROUP, term), List.of(), duration, NODE_EXPIRY);
				LeaseState renewed = tick.renewed().get(GROUP);
				if (renewed == null) {
					break;
				}
				assertThat(renewed.term()).isEqualTo(term);
				grants.add(new Grant(node.id(), term, renewed.expiresAt(), renewed.expiresAt().minus(duration)));
			}
			if (!abandon && store.release(node.id(), Map.of(GROUP, term)).contains(GROUP)) {
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
	private static void assertRenewalsFollowTermOrder(List<Grant> grants) {
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
	private static void assertNewTermsStartAfterUnreleasedTermsExpire(List<Grant> grants, Set<Long> released) {
		TreeMap<Long, String> holders = new TreeMap<>();
		grants.forEach((grant) -> holders.put(grant.term(), grant.node()));
		Map<Long, Instant> lastExpiry = new HashMap<>();
		// The next term granted: the term plus one where terms rise by one, which the
		// test checked before.
		grants.stream()
			.filter((grant) -> !grant.node().equals(nextHolder(holders, grant.term())))
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

	private static @Nullable String nextHolder(TreeMap<Long, String> holders, long term) {
		Map.Entry<Long, String> next = holders.higherEntry(term);
		return (next != null) ? next.getValue() : null;
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
