package dev.leader.test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

import dev.leader.NodeInfo;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.CoordinationStore.Tick;
import dev.leader.lease.LeaseState;
import dev.leader.node.NodeRegistration;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

import org.springframework.dao.DuplicateKeyException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The membership part of {@link AbstractCoordinationStoreContractTests}: how a
 * {@link CoordinationStore} registers nodes, tells which are alive, forgets them, and
 * names the successor it wakes listeners with when a lease is released.
 */
abstract class CoordinationMembershipContract extends CoordinationContract {

	private final Supplier<CoordinationStore> store;

	private final BooleanSupplier announcesReleases;

	private final BooleanSupplier sharedByProcesses;

	/**
	 * Creates the tests of the store of the enclosing suite.
	 * @param store the store of the running test
	 * @param announcesReleases whether the store wakes listeners when a lease is released
	 * @param sharedByProcesses whether processes share the store
	 */
	CoordinationMembershipContract(Supplier<CoordinationStore> store, BooleanSupplier announcesReleases,
			BooleanSupplier sharedByProcesses) {
		this.store = store;
		this.announcesReleases = announcesReleases;
		this.sharedByProcesses = sharedByProcesses;
	}

	@Test
	void tickRegistersTheNodeAndReturnsTheMembersWithTheirLiveness() {
		Tick first = tick(A, NODE_EXPIRY);
		assertThat(first.members()).singleElement().satisfies((member) -> {
			assertThat(member.id()).isEqualTo(A.id());
			assertThat(member.name()).isEqualTo(A.name());
			assertThat(member.host()).isEqualTo(A.host());
			assertThat(member.pid()).isEqualTo(A.pid());
			assertThat(member.heartbeatAt()).isAfterOrEqualTo(member.startedAt());
			assertThat(member.alive()).isTrue();
		});
		NodeInfo registered = first.members().get(0);
		Tick second = tick(B, NODE_EXPIRY);
		assertThat(second.members()).extracting(NodeInfo::id, NodeInfo::alive)
			.containsExactlyInAnyOrder(tuple(A.id(), true), tuple(B.id(), true));
		Tick third = tick(A, NODE_EXPIRY);
		assertThat(third.members()).filteredOn(NodeInfo::id, A.id()).singleElement().satisfies((member) -> {
			assertThat(member.startedAt()).isEqualTo(registered.startedAt());
			assertThat(member.heartbeatAt()).isAfter(registered.heartbeatAt());
		});
	}

	@Test
	void tickAdvertisesTheNodesBaseUrlAndZoneToEveryMemberAndALaterTickChangesOrClearsThem() {
		assertThat(member(tick(A, NODE_EXPIRY), A.id())).isNotNull().satisfies((member) -> {
			assertThat(member.baseUrl()).isNull();
			assertThat(member.zone()).isNull();
		});
		NodeRegistration addressed = A.withAddress("http://127.0.0.1:8081/app", "eu-west-1a");
		assertThat(member(tick(addressed, NODE_EXPIRY), A.id())).isNotNull()
			.extracting(NodeInfo::baseUrl, NodeInfo::zone)
			.containsExactly("http://127.0.0.1:8081/app", "eu-west-1a");
		assertThat(member(tick(B, NODE_EXPIRY), A.id())).isNotNull()
			.extracting(NodeInfo::baseUrl, NodeInfo::zone)
			.containsExactly("http://127.0.0.1:8081/app", "eu-west-1a");
		tick(A.withAddress("https://node-a.example.com", null), NODE_EXPIRY);
		assertThat(member(tick(B, NODE_EXPIRY), A.id())).isNotNull()
			.extracting(NodeInfo::baseUrl, NodeInfo::zone)
			.containsExactly("https://node-a.example.com", null);
		tick(A, NODE_EXPIRY);
		assertThat(member(tick(B, NODE_EXPIRY), A.id())).isNotNull()
			.extracting(NodeInfo::baseUrl, NodeInfo::zone)
			.containsExactly(null, null);
	}

	@Test
	void nodeSilentPastTheNodeExpiryIsNotAliveAndIsForgottenAfterTwiceTheExpiry() {
		Duration nodeExpiry = Duration.ofMillis(500);
		NodeInfo silent = tick(A, nodeExpiry).members().get(0);
		assertThat(member(tick(B, nodeExpiry), A.id())).isNotNull().extracting(NodeInfo::alive).isEqualTo(true);
		NodeInfo dead = await().atMost(WAIT).pollInterval(POLL).until(() -> {
			Tick tick = tick(B, nodeExpiry);
			assertThat(member(tick, B.id())).extracting(NodeInfo::alive).isEqualTo(true);
			return member(tick, A.id());
		}, (member) -> member != null && !member.alive());
		assertThat(dead.heartbeatAt()).isEqualTo(silent.heartbeatAt());
		await().atMost(WAIT)
			.pollInterval(POLL)
			.untilAsserted(
					() -> assertThat(tick(B, nodeExpiry).members()).extracting(NodeInfo::id).containsExactly(B.id()));
	}

	/**
	 * A lease may outlive its holder's last heartbeat (granted after it, or longer than
	 * the node expiry): a second process with the holder's id, once the holder is silent,
	 * must not register while that lease is valid, since the holder, merely paused, still
	 * acts on it, and a registered process may be granted the lease again under its id.
	 * The holder itself, resumed, heartbeats with the term it holds. Once it released the
	 * lease, the second process registers, within a lease duration of the holder's last
	 * grant or renewal: a store may count that long from the node's row.
	 */
	@Test
	void secondProcessWithTheIdOfASilentHolderRegistersOnlyOnceTheHoldersLeasesAreOver() {
		assumeTrue(this.sharedByProcesses.getAsBoolean(), "the store serves one process");
		Duration nodeExpiry = Duration.ofMillis(500);
		tick(A, nodeExpiry);
		LeaseState held = grant(GROUP, A);
		// Empty once the second process registered.
		Optional<DuplicateKeyException> refused = await().atMost(WAIT).pollInterval(POLL).until(() -> {
			try {
				tick(A_AGAIN, nodeExpiry);
				return Optional.<DuplicateKeyException>empty();
			}
			catch (DuplicateKeyException ex) {
				return Optional.of(ex);
			}
		}, (refusal) -> refusal.isEmpty() || refusal.get().getMessage().contains("holds leases"));
		assertThat(refused).as("a second process registered the id of a holder whose lease is valid")
			.hasValueSatisfying((ex) -> assertThat(ex.getMessage()).contains(A.id(), GROUP));
		assertThat(store().leases()).filteredOn((lease) -> lease.group().equals(GROUP))
			.singleElement()
			.extracting(LeaseState::holder, LeaseState::term)
			.containsExactly(A.id(), held.term());
		Tick resumed = store().tick(A, Map.of(GROUP, held.term()), List.of(GROUP), LONG, nodeExpiry);
		assertThat(resumed.renewed()).containsKey(GROUP);
		assertThat(store().release(A.id(), Map.of(GROUP, held.term()))).containsExactly(GROUP);
		Tick registered = await().atMost(LONG.plus(WAIT))
			.pollInterval(POLL)
			.ignoreException(DuplicateKeyException.class)
			.until(() -> tick(A_AGAIN, nodeExpiry), (tick) -> tick != null);
		assertThat(member(registered, A.id())).isNotNull().extracting(NodeInfo::pid).isEqualTo(A_AGAIN.pid());
	}

	@Test
	void deregisteredNodeLeavesTheMembersAtOnceAndRejoinsOnItsNextTick() {
		tick(A, NODE_EXPIRY);
		tick(B, NODE_EXPIRY);
		store().deregister(A);
		assertThat(tick(B, NODE_EXPIRY).members()).extracting(NodeInfo::id).containsExactly(B.id());
		store().deregister(new NodeRegistration("never-registered", "app", "host", 1));
		tick(A, NODE_EXPIRY);
		assertThat(tick(B, NODE_EXPIRY).members()).extracting(NodeInfo::id).containsExactlyInAnyOrder(A.id(), B.id());
	}

	/**
	 * A process that stops after another one took its node id over (once it had gone
	 * silent for the node expiry) leaves the other's registration alone.
	 */
	@Test
	void deregistrationByAnEarlierProcessWithTheIdLeavesTheLaterOnesRegistration() {
		assumeTrue(this.sharedByProcesses.getAsBoolean(), "the store serves one process");
		takeOverAsSecondProcess();
		store().deregister(A);
		assertThat(member(tick(B, NODE_EXPIRY), A.id())).isNotNull().satisfies((member) -> {
			assertThat(member.pid()).isEqualTo(A_AGAIN.pid());
			assertThat(member.alive()).isTrue();
		});
		store().deregister(A_AGAIN);
		assertThat(tick(B, NODE_EXPIRY).members()).extracting(NodeInfo::id).containsExactly(B.id());
	}

	/**
	 * Only the process that registered a node id is granted leases under it: a process
	 * that went silent and whose id another process took over asks in vain.
	 */
	@Test
	void processWhoseNodeIdAnotherProcessTookOverIsRefusedALease() {
		assumeTrue(this.sharedByProcesses.getAsBoolean(), "the store serves one process");
		takeOverAsSecondProcess();
		assertThat(store().acquire(GROUP, A, LONG).granted()).isFalse();
		assertThat(store().leases()).noneMatch(LeaseState::isHeld);
		assertThat(store().acquire(GROUP, A_AGAIN, LONG).granted()).isTrue();
	}

	@Test
	void releaseEndsOnlyTheHoldersOwnTermAndKeepsTheTerm() {
		LeaseState kept = grant("kept", A);
		assertThat(store().release(A.id(), Map.of("kept", kept.term() + 1))).isEmpty();
		assertThat(store().release(B.id(), Map.of("kept", kept.term()))).isEmpty();
		assertThat(store().release(A.id(), Map.of("kept", kept.term()))).containsExactly("kept");
		assertThat(store().leases()).filteredOn((lease) -> lease.group().equals("kept"))
			.singleElement()
			.satisfies((lease) -> {
				assertThat(lease.holder()).isNull();
				assertThat(lease.term()).isEqualTo(kept.term());
			});
	}

	/**
	 * A store announces releases, with the successor, or declares that it does not, and
	 * then never calls a listener.
	 */
	@Test
	void releaseIsAnnouncedToListenersExactlyWhenTheStoreSaysItAnnouncesReleases() throws Exception {
		if (this.announcesReleases.getAsBoolean()) {
			releaseWakesListenersWithTheGroupNameAndTheLongestRunningOtherNode();
		}
		else {
			storeThatAnnouncesNoReleaseNeverCallsItsListener();
		}
	}

	private void storeThatAnnouncesNoReleaseNeverCallsItsListener() throws Exception {
		List<String> woken = new CopyOnWriteArrayList<>();
		try (AutoCloseable listening = store().listen((group, successor) -> woken.add(group))) {
			LeaseState released = grant(GROUP, A);
			store().release(A.id(), Map.of(GROUP, released.term()));
			await().during(Duration.ofMillis(300)).atMost(WAIT).until(woken::isEmpty);
		}
	}

	private void releaseWakesListenersWithTheGroupNameAndTheLongestRunningOtherNode() throws Exception {
		for (NodeRegistration node : List.of(A, B, C)) {
			tick(node, NODE_EXPIRY);
		}
		List<String> woken = new CopyOnWriteArrayList<>();
		Map<String, String> successors = new ConcurrentHashMap<>();
		try (AutoCloseable listening = store().listen((group, successor) -> {
			woken.add(group);
			successors.put(group, String.valueOf(successor));
		})) {
			// A listener may start listening after listen() returns, so release until one
			// arrives.
			await().atMost(WAIT).pollInterval(Duration.ofMillis(100)).until(() -> {
				LeaseState warmUp = grant("warm-up", A);
				store().release(A.id(), Map.of("warm-up", warmUp.term()));
				return woken.contains("warm-up");
			});
			LeaseState kept = grant("kept", A);
			assertThat(store().release(A.id(), Map.of("kept", kept.term() + 1))).isEmpty();
			assertThat(store().release(B.id(), Map.of("kept", kept.term()))).isEmpty();
			LeaseState released = grant(GROUP, A);
			assertThat(store().release(A.id(), Map.of(GROUP, released.term()))).containsExactly(GROUP);
			await().atMost(WAIT).until(() -> woken.contains(GROUP));
			// Wake-ups come in release order, so the refused releases before would have
			// shown up by now.
			assertThat(woken).filteredOn((group) -> !group.equals("warm-up")).containsExactly(GROUP);
			assertThat(successors).containsEntry(GROUP, B.id());
			LeaseState second = grant("second", B);
			store().release(B.id(), Map.of("second", second.term()));
			await().atMost(WAIT).until(() -> woken.contains("second"));
			assertThat(successors).containsEntry("second", A.id());
		}
	}

	private Tick tick(NodeRegistration node, Duration nodeExpiry) {
		return store().tick(node, Map.of(), List.of(), LONG, nodeExpiry);
	}

	// A registers with a short node expiry and goes silent; A_AGAIN takes its id over.
	private void takeOverAsSecondProcess() {
		Duration nodeExpiry = Duration.ofMillis(500);
		tick(A, nodeExpiry);
		await().atMost(WAIT.multipliedBy(2))
			.pollInterval(POLL)
			.ignoreException(DuplicateKeyException.class)
			.until(() -> tick(A_AGAIN, nodeExpiry), (tick) -> tick != null);
	}

	private LeaseState grant(String group, NodeRegistration node) {
		return grant(store(), group, node, LONG);
	}

	private CoordinationStore store() {
		return this.store.get();
	}

	private static @Nullable NodeInfo member(Tick tick, String id) {
		return tick.members().stream().filter((member) -> member.id().equals(id)).findFirst().orElse(null);
	}

}
