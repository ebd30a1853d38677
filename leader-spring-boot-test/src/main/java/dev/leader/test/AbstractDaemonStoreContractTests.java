package dev.leader.test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;

import dev.leader.FencingToken;
import dev.leader.daemon.Assignment;
import dev.leader.daemon.AssignmentState;
import dev.leader.daemon.DaemonGuard;
import dev.leader.daemon.DaemonStore;
import dev.leader.lease.CoordinationStore;
import dev.leader.node.NodeRegistration;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.transaction.IllegalTransactionStateException;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * The behaviour every {@link DaemonStore} must show, run against the real coordinator. A
 * store passes this suite through a small subclass whose {@link #createStores()} gives,
 * on an empty coordinator (no leases, nodes or assignments), the daemon store under test,
 * the {@link CoordinationStore} of the same coordinator (the suite registers nodes and
 * takes the leader's lease with it), and the transaction manager whose transactions
 * {@link DaemonGuard#lock} runs in, or {@code null} for a store that is not the
 * application's database and so offers no guard; {@link #destroyStores} removes them
 * again.
 * <p>
 * Every transition is a compare-and-set on the daemon's generation, and the leader's
 * writes change nothing unless its token still holds the lease. The concurrency fuzz test
 * races nodes that assign a daemon to themselves, acknowledge and hand it back, and
 * checks exactly that every generation went to one node and that generations were handed
 * out one by one; another races an acknowledgement against a reclaim of the same
 * generation, of which exactly one may succeed.
 */
public abstract class AbstractDaemonStoreContractTests extends StoresContract<AbstractDaemonStoreContractTests.Stores> {

	private static final String GROUP = "default";

	private static final String LEADER = "leader";

	private static final Duration LEASE = Duration.ofSeconds(30);

	private static final Duration EXPIRY = Duration.ofSeconds(10);

	private FencingToken leader;

	/**
	 * Returns whether a daemon's first assignment takes the assigning leader's term as
	 * its generation, as a store whose terms are revisions of the whole coordinator does,
	 * such as etcd's, so that a coordinator restored from an older backup, once its
	 * revision is past every one it gave before, gives no generation again; the next
	 * assignments in the same term count on from it. {@code false} for a store that
	 * counts generations from 1.
	 * @return whether generations start at the leader's term
	 */
	protected boolean generationsStartAtTheTerm() {
		return false;
	}

	@BeforeEach
	void takeTheLeadersLease() {
		CoordinationStore.AcquireResult result = acquire(LEADER);
		assertThat(result.granted()).isTrue();
		this.leader = new FencingToken(GROUP, result.lease().term());
	}

	@Test
	void readShowsTheDaemonsEachNodeAdvertisesAndWhetherItIsAlive() {
		heartbeat("node-a", Set.of("outbox", "reports"));
		assertThat(daemons().read(EXPIRY).member("node-a")).hasValueSatisfying((member) -> {
			assertThat(member.daemons()).containsExactlyInAnyOrder("outbox", "reports");
			assertThat(member.alive()).isTrue();
		});
		assertThat(daemons().read(EXPIRY).assignments()).isEmpty();
	}

	@Test
	void assignmentGoesThroughItsStatesAndTheNextOneGetsTheNextGeneration() {
		heartbeat("node-a", Set.of("outbox"));
		assertThat(daemons().assign(this.leader, LEADER, "outbox", "node-a", 0)).isEqualTo(first());
		assertThat(assignment("outbox"))
			.extracting(Assignment::node, Assignment::state, Assignment::generation, Assignment::term)
			.containsExactly("node-a", AssignmentState.ASSIGNING, first(), this.leader.term());
		assertThat(daemons().acknowledge("node-a", "outbox", first())).isTrue();
		assertThat(assignment("outbox").state()).isEqualTo(AssignmentState.ACTIVE);
		assertThat(daemons().revoke(this.leader, LEADER, "outbox", first())).isTrue();
		assertThat(assignment("outbox").state()).isEqualTo(AssignmentState.REVOKING);
		assertThat(daemons().release("node-a", "outbox", first())).isTrue();
		assertThat(assignment("outbox")).extracting(Assignment::state, Assignment::isLive)
			.containsExactly(AssignmentState.DELETED, false);
		assertThat(daemons().assign(this.leader, LEADER, "outbox", "node-a", first())).isEqualTo(first() + 1);
		assertThat(daemons().reclaim(this.leader, LEADER, "outbox", first() + 1, AssignmentState.ASSIGNING)).isTrue();
		assertThat(assignment("outbox")).extracting(Assignment::state, Assignment::generation)
			.containsExactly(AssignmentState.DELETED, first() + 1);
	}

	@Test
	void daemonWithALiveAssignmentCannotBeAssignedAgain() {
		assertThat(daemons().assign(this.leader, LEADER, "outbox", "node-a", 0)).isEqualTo(first());
		assertThat(daemons().assign(this.leader, LEADER, "outbox", "node-b", 0)).isZero();
		assertThat(daemons().assign(this.leader, LEADER, "outbox", "node-b", first())).isZero();
		assertThat(assignment("outbox")).extracting(Assignment::node, Assignment::generation)
			.containsExactly("node-a", first());
	}

	@Test
	void transitionsWithAnotherGenerationOrNodeChangeNothing() {
		daemons().assign(this.leader, LEADER, "outbox", "node-a", 0);
		assertThat(daemons().acknowledge("node-a", "outbox", first() + 1)).isFalse();
		assertThat(daemons().acknowledge("node-b", "outbox", first())).isFalse();
		assertThat(daemons().revoke(this.leader, LEADER, "outbox", first() + 1)).isFalse();
		assertThat(daemons().reclaim(this.leader, LEADER, "outbox", 0, AssignmentState.ASSIGNING)).isFalse();
		assertThat(daemons().release("node-b", "outbox", first())).isFalse();
		assertThat(daemons().release("node-a", "outbox", first() + 1)).isFalse();
		assertThat(daemons().acknowledge("node-a", "never-assigned", first())).isFalse();
		assertThat(assignment("outbox")).extracting(Assignment::node, Assignment::state, Assignment::generation)
			.containsExactly("node-a", AssignmentState.ASSIGNING, first());
	}

	@Test
	void deposedLeaderCannotChangeAssignments() {
		daemons().assign(this.leader, LEADER, "outbox", "node-a", 0);
		coordination().release(LEADER, Map.of(GROUP, this.leader.term()));
		assertThat(acquire("successor").granted()).isTrue();
		assertThat(daemons().assign(this.leader, LEADER, "reports", "node-a", 0)).isZero();
		assertThat(daemons().revoke(this.leader, LEADER, "outbox", first())).isFalse();
		assertThat(daemons().reclaim(this.leader, LEADER, "outbox", first(), AssignmentState.ASSIGNING)).isFalse();
		assertThat(daemons().read(EXPIRY).assignments()).singleElement()
			.extracting(Assignment::daemon, Assignment::state)
			.containsExactly("outbox", AssignmentState.ASSIGNING);
	}

	@Test
	void reclaimChangesNothingOnceTheAssignmentLeftTheStateItWasReadIn() {
		daemons().assign(this.leader, LEADER, "outbox", "node-a", 0);
		Assignment read = assignment("outbox");
		assertThat(daemons().acknowledge("node-a", "outbox", first())).isTrue();
		assertThat(daemons().reclaim(this.leader, LEADER, "outbox", first(), read.state()))
			.as("reclaim for the ack timeout after the acknowledgement")
			.isFalse();
		assertThat(assignment("outbox").state()).isEqualTo(AssignmentState.ACTIVE);
		assertThat(daemons().revoke(this.leader, LEADER, "outbox", first())).isTrue();
		assertThat(daemons().reclaim(this.leader, LEADER, "outbox", first(), AssignmentState.ACTIVE)).isFalse();
		assertThat(daemons().reclaim(this.leader, LEADER, "outbox", first(), AssignmentState.REVOKING)).isTrue();
		assertThat(assignment("outbox").state()).isEqualTo(AssignmentState.DELETED);
	}

	/**
	 * A node acknowledges while the leader reclaims the same ASSIGNING generation for the
	 * ack timeout: exactly one of them changes the assignment, so a node whose
	 * acknowledgement succeeded never finds its daemon given to another node by that
	 * reclaim.
	 */
	@Test
	void racingAcknowledgementAndReclaimNeverBothSucceed() throws Exception {
		ExecutorService executor = Executors.newFixedThreadPool(2);
		try {
			long deleted = 0;
			for (int round = 0; round < 40; round++) {
				long generation = daemons().assign(this.leader, LEADER, "outbox", "node-a", deleted);
				assertThat(generation).isEqualTo((deleted == 0) ? first() : deleted + 1);
				CyclicBarrier start = new CyclicBarrier(2);
				Future<Boolean> acknowledged = executor.submit(() -> {
					start.await(10, TimeUnit.SECONDS);
					return daemons().acknowledge("node-a", "outbox", generation);
				});
				Future<Boolean> reclaimed = executor.submit(() -> {
					start.await(10, TimeUnit.SECONDS);
					return daemons().reclaim(this.leader, LEADER, "outbox", generation, AssignmentState.ASSIGNING);
				});
				boolean ack = acknowledged.get(10, TimeUnit.SECONDS);
				boolean reclaim = reclaimed.get(10, TimeUnit.SECONDS);
				assertThat(ack ^ reclaim).as("round %d: acknowledged %s, reclaimed %s", round, ack, reclaim).isTrue();
				assertThat(assignment("outbox").state())
					.isEqualTo(ack ? AssignmentState.ACTIVE : AssignmentState.DELETED);
				if (ack) {
					assertThat(daemons().release("node-a", "outbox", generation)).isTrue();
				}
				deleted = generation;
			}
		}
		finally {
			executor.shutdownNow();
		}
	}

	@Test
	void drainingAnUnknownNodeReportsThatTheCoordinatorDoesNotKnowIt() {
		heartbeat("node-a", Set.of("outbox"));
		assertThat(daemons().drain("node-a", true)).isTrue();
		assertThat(daemons().drain("unknown", true)).isFalse();
	}

	@Test
	void lockReadsTheAssignmentInATransactionAndRefusesToRunWithoutOne() {
		PlatformTransactionManager transactionManager = stores().transactions();
		if (transactionManager == null) {
			assertThat(daemons()).as("a store tested without transactions to guard").isNotInstanceOf(DaemonGuard.class);
			return;
		}
		daemons().assign(this.leader, LEADER, "outbox", "node-a", 0);
		TransactionTemplate transactions = new TransactionTemplate(transactionManager);
		Assignment locked = transactions.execute((status) -> guard().lock("outbox"));
		assertThat(locked).extracting(Assignment::node, Assignment::generation).containsExactly("node-a", first());
		Assignment none = transactions.execute((status) -> guard().lock("never-assigned"));
		assertThat(none).isNull();
		assertThatExceptionOfType(IllegalTransactionStateException.class).isThrownBy(() -> guard().lock("outbox"));
	}

	/**
	 * The store as a {@link DaemonGuard}, for the SQL family's stores; a store given
	 * transactions without a guard fails the lock test rather than skipping it.
	 * @return the guard
	 */
	private DaemonGuard guard() {
		return (DaemonGuard) daemons();
	}

	/**
	 * Nodes race for one daemon: each reads the assignment, asks the leader's token to
	 * assign the daemon to itself when it has no live assignment, and then acknowledges
	 * and hands back what it got, sometimes leaving it for another node to find live.
	 * Every generation must have gone to exactly one node, and the generations handed out
	 * must be exactly the first to the last one the store shows.
	 */
	@Test
	void racingAssignmentsGiveEachGenerationToOneNodeAndHandGenerationsOutOneByOne() throws Exception {
		int nodes = 6;
		CyclicBarrier start = new CyclicBarrier(nodes);
		Map<Long, Set<String>> holders = new ConcurrentHashMap<>();
		ExecutorService executor = Executors.newFixedThreadPool(nodes);
		try {
			List<Future<?>> races = new ArrayList<>();
			for (int i = 0; i < nodes; i++) {
				String node = "racer-" + i;
				heartbeat(node, Set.of("solo"));
				Random random = new Random(i);
				races.add(executor.submit(() -> {
					start.await(10, TimeUnit.SECONDS);
					for (int attempt = 0; attempt < 60; attempt++) {
						Assignment current = daemons().read(EXPIRY).assignment("solo").orElse(null);
						if (current != null && current.isLive()) {
							if (random.nextInt(4) == 0) {
								daemons().reclaim(this.leader, LEADER, "solo", current.generation(), current.state());
							}
							continue;
						}
						long deleted = (current != null) ? current.generation() : 0;
						long generation = daemons().assign(this.leader, LEADER, "solo", node, deleted);
						if (generation == 0) {
							continue;
						}
						holders.computeIfAbsent(generation, (key) -> ConcurrentHashMap.newKeySet()).add(node);
						daemons().acknowledge(node, "solo", generation);
						if (random.nextBoolean()) {
							daemons().release(node, "solo", generation);
						}
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
		Map<Long, Set<String>> sorted = new TreeMap<>(holders);
		assertThat(sorted).allSatisfy((generation, nodesOfGeneration) -> assertThat(nodesOfGeneration)
			.as("nodes assigned generation " + generation)
			.hasSize(1));
		long last = assignment("solo").generation();
		assertThat(sorted.keySet()).as("generations handed out")
			.containsExactlyElementsOf(LongStream.rangeClosed(first(), last).boxed().toList());
		assertThat(last - first() + 1).as("generations").isGreaterThan(nodes);
	}

	/**
	 * Returns the generation of a daemon's first assignment by the leader of the test: 1,
	 * unless {@link #generationsStartAtTheTerm()}.
	 * @return the first generation
	 */
	private long first() {
		return generationsStartAtTheTerm() ? this.leader.term() : 1;
	}

	private CoordinationStore.AcquireResult acquire(String node) {
		heartbeat(node, Set.of());
		return coordination().acquire(GROUP, registration(node, Set.of()), LEASE);
	}

	private static NodeRegistration registration(String node, Set<String> daemons) {
		return new NodeRegistration(node, node, "host", 1, daemons);
	}

	private void heartbeat(String node, Set<String> daemons) {
		coordination().tick(registration(node, daemons), Map.of(), List.of(), LEASE, EXPIRY);
	}

	private Assignment assignment(String daemon) {
		return daemons().read(EXPIRY).assignment(daemon).orElseThrow();
	}

	private DaemonStore daemons() {
		return stores().daemons();
	}

	private CoordinationStore coordination() {
		return stores().coordination();
	}

	/**
	 * The stores of one test, on one coordinator.
	 *
	 * @param coordination the coordination store, which the suite registers nodes and
	 * takes the leader's lease with
	 * @param daemons the daemon store under test
	 * @param transactions the transaction manager whose transactions
	 * {@link DaemonGuard#lock} runs in, or {@code null} for a store that offers no guard
	 */
	public record Stores(CoordinationStore coordination, DaemonStore daemons,
			@Nullable PlatformTransactionManager transactions) {
	}

}
