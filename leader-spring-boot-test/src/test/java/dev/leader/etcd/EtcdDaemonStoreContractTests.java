package dev.leader.etcd;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import dev.leader.FencingToken;
import dev.leader.daemon.Assignment;
import dev.leader.daemon.AssignmentState;
import dev.leader.daemon.DaemonRequest;
import dev.leader.daemon.DaemonSnapshot;
import dev.leader.daemon.Member;
import dev.leader.node.NodeRegistration;
import dev.leader.test.AbstractDaemonStoreContractTests;
import dev.leader.test.EtcdCluster;
import dev.leader.test.Grants;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.options.DeleteOption;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@link EtcdDaemonStore} against a real cluster of three etcd members, started once for
 * the class, with a key prefix of its own per test, beside the
 * {@link EtcdCoordinationStore} of the same prefix. etcd is not the application's
 * database, so the store offers no guard. Beside the contract: requests, drains, and the
 * time an assignment is measured from.
 */
class EtcdDaemonStoreContractTests extends AbstractDaemonStoreContractTests {

	private static final Duration TIMEOUT = Duration.ofSeconds(3);

	private static final Duration LEASE = Duration.ofSeconds(30);

	private static final Duration EXPIRY = Duration.ofSeconds(10);

	private static EtcdCluster cluster;

	private static Client client;

	private String prefix;

	@BeforeAll
	static void startCluster() {
		cluster = EtcdCluster.start();
		client = Client.builder().endpoints(cluster.endpoints().toArray(String[]::new)).build();
	}

	@AfterAll
	static void stopCluster() {
		try (EtcdCluster started = cluster; Client opened = client) {
			cluster = null;
			client = null;
		}
	}

	@Override
	protected boolean generationsStartAtTheTerm() {
		return true;
	}

	@Override
	protected Stores createStores() {
		this.prefix = "leader-test/" + UUID.randomUUID();
		// As the auto-configuration builds them: the daemon store reads the keys the
		// coordination store follows.
		EtcdCoordinationStore coordination = new EtcdCoordinationStore(client, this.prefix, TIMEOUT);
		return new Stores(coordination, new EtcdDaemonStore(coordination, TIMEOUT), null);
	}

	@Override
	protected void destroyStores(Stores stores) throws Exception {
		((EtcdCoordinationStore) stores.coordination()).close();
		client.getKVClient()
			.delete(EtcdKeys.bytes(this.prefix), DeleteOption.builder().isPrefix(true).build())
			.get(5, TimeUnit.SECONDS);
	}

	@Test
	void requestIsReadUntilTheLeaderCarriesItOutAndAReplacedOneIsKept() {
		EtcdDaemonStore daemons = new EtcdDaemonStore(client, this.prefix, TIMEOUT);
		FencingToken leader = lead("boss");
		DaemonRequest move = daemons.request(DaemonRequest.Kind.MOVE, "outbox", "node-b");
		DaemonRequest rebalance = daemons.request(DaemonRequest.Kind.REBALANCE, "", null);
		assertThat(daemons.read(EXPIRY).requests()).containsExactlyInAnyOrder(move, rebalance);
		DaemonRequest replaced = daemons.request(DaemonRequest.Kind.MOVE, "outbox", "node-c");
		assertThat(daemons.forget(leader, "boss", move)).as("forgetting a request replaced since").isFalse();
		assertThat(daemons.assign(leader, "boss", "outbox", "node-b", 0, move.requestedAt())).isEqualTo(leader.term());
		assertThat(daemons.read(EXPIRY).requests()).as("the replacement outlives the assignment of the first")
			.containsExactlyInAnyOrder(replaced, rebalance);
		assertThat(daemons.forget(leader, "boss", rebalance)).isTrue();
		assertThat(daemons.release("node-b", "outbox", leader.term())).isTrue();
		assertThat(daemons.assign(leader, "boss", "outbox", "node-c", leader.term(), replaced.requestedAt()))
			.isEqualTo(leader.term() + 1);
		assertThat(daemons.read(EXPIRY).requests()).isEmpty();
	}

	@Test
	void drainedNodeIsReadDrainedUntilUndrained() {
		EtcdCoordinationStore coordination = new EtcdCoordinationStore(client, this.prefix, TIMEOUT);
		EtcdDaemonStore daemons = new EtcdDaemonStore(client, this.prefix, TIMEOUT);
		coordination.tick(new NodeRegistration("node-a", "node-a", "host", 1, Set.of("outbox")), Map.of(), List.of(),
				LEASE, EXPIRY);
		assertThat(daemons.drain("node-a", true)).isTrue();
		assertThat(daemons.read(EXPIRY).member("node-a")).hasValueSatisfying((member) -> {
			assertThat(member.drained()).isTrue();
			assertThat(member.takesDaemons()).isFalse();
		});
		assertThat(daemons.drain("node-a", false)).isTrue();
		assertThat(daemons.read(EXPIRY).member("node-a"))
			.hasValueSatisfying((member) -> assertThat(member.takesDaemons()).isTrue());
	}

	@Test
	void storeBuiltBesideTheCoordinationStoreTakesTheAssignmentsFromItsHeartbeat() throws Exception {
		EtcdCoordinationStore coordination = new EtcdCoordinationStore(client, this.prefix, TIMEOUT);
		EtcdDaemonStore daemons = new EtcdDaemonStore(coordination, TIMEOUT);
		BlockingQueue<DaemonSnapshot> snapshots = new LinkedBlockingQueue<>();
		NodeRegistration node = new NodeRegistration("node-a", "node-a", "host", 1, Set.of("outbox"));
		try (AutoCloseable following = daemons.followHeartbeat(snapshots::add)) {
			coordination.tick(node, Map.of(), List.of(), LEASE, EXPIRY);
			assertThat(snapshots.poll()).isNotNull();
			FencingToken leader = lead("boss");
			assertThat(daemons.assign(leader, "boss", "outbox", "node-a", 0)).isEqualTo(leader.term());
			snapshots.clear();
			coordination.tick(node, Map.of(), List.of(), LEASE, EXPIRY);
			DaemonSnapshot snapshot = snapshots.poll();
			assertThat(snapshot).isNotNull();
			assertThat(only(snapshot)).extracting(Assignment::node, Assignment::generation)
				.containsExactly("node-a", leader.term());
			assertThat(snapshot.member("node-a"))
				.hasValueSatisfying((member) -> assertThat(member.daemons()).containsExactly("outbox"));
		}
		snapshots.clear();
		coordination.tick(node, Map.of(), List.of(), LEASE, EXPIRY);
		assertThat(snapshots).as("after the handle was closed").isEmpty();
	}

	@Test
	void keysOfAPrefixNestedInThisOneAreNotReadAsThisOnes() {
		EtcdCoordinationStore nested = new EtcdCoordinationStore(client, this.prefix + "/nodes", TIMEOUT);
		NodeRegistration node = new NodeRegistration("node-n", "node-n", "host", 1, Set.of("outbox"));
		EtcdDaemonStore nestedDaemons = new EtcdDaemonStore(client, this.prefix + "/nodes", TIMEOUT);
		FencingToken nestedLeader = new FencingToken("moves",
				Grants.acquire(nested, "moves", node, LEASE).lease().term());
		assertThat(nestedDaemons.assign(nestedLeader, "node-n", "outbox", "node-n", 0)).isPositive();
		DaemonSnapshot snapshot = new EtcdDaemonStore(client, this.prefix, TIMEOUT).read(EXPIRY);
		assertThat(snapshot.members()).extracting(Member::id).doesNotContain("node-n");
		assertThat(snapshot.assignments()).isEmpty();
	}

	/**
	 * A node whose key etcd expired while it was paused registers again with its next
	 * heartbeat, onto a new session: an operator's drain stays with its member record, as
	 * it stays on a database's row of the same process.
	 */
	@Test
	void drainedNodeThatRegistersAgainStaysDrained() throws Exception {
		EtcdCoordinationStore coordination = new EtcdCoordinationStore(client, this.prefix, TIMEOUT);
		EtcdDaemonStore daemons = new EtcdDaemonStore(client, this.prefix, TIMEOUT);
		NodeRegistration node = new NodeRegistration("node-a", "node-a", "host", 1, Set.of("outbox"));
		Duration expiry = Duration.ofSeconds(1);
		coordination.tick(node, Map.of(), List.of(), LEASE, expiry);
		long session = lease(client.getKVClient().get(EtcdKeys.bytes(this.prefix + "#/nodes/node-a")));
		assertThat(daemons.drain("node-a", true)).isTrue();
		await().atMost(Duration.ofSeconds(15))
			.until(() -> daemons.read(expiry).member("node-a").map((member) -> !member.alive()).orElse(false));
		coordination.tick(node, Map.of(), List.of(), LEASE, expiry);
		assertThat(lease(client.getKVClient().get(EtcdKeys.bytes(this.prefix + "#/nodes/node-a"))))
			.as("the node key's session, once registered again")
			.isNotEqualTo(session);
		assertThat(daemons.read(expiry).member("node-a")).hasValueSatisfying((member) -> {
			assertThat(member.alive()).isTrue();
			assertThat(member.drained()).isTrue();
		});
		coordination.close();
	}

	/**
	 * A node that stops gracefully is drained first, then deregistered: its mark goes
	 * with its registration, so that a node started again under its id takes daemons.
	 */
	@Test
	void drainedMarkGoesWithTheNodesDeregistration() throws Exception {
		try (EtcdCoordinationStore coordination = new EtcdCoordinationStore(client, this.prefix, TIMEOUT)) {
			EtcdDaemonStore daemons = new EtcdDaemonStore(coordination, TIMEOUT);
			NodeRegistration node = new NodeRegistration("node-a", "node-a", "host", 1, Set.of("outbox"));
			coordination.tick(node, Map.of(), List.of(), LEASE, EXPIRY);
			assertThat(daemons.drain("node-a", true)).isTrue();
			coordination.deregister(node);
			coordination.tick(node, Map.of(), List.of(), LEASE, EXPIRY);
			assertThat(daemons.read(EXPIRY).member("node-a"))
				.hasValueSatisfying((member) -> assertThat(member.takesDaemons()).isTrue());
		}
	}

	/**
	 * A write of the daemon store that changes nothing under the prefix, such as the
	 * undrain of a node that is not drained, leaves no revision for the coordination
	 * store's watch to wait for, even when etcd's revision rose elsewhere meanwhile.
	 */
	@Test
	void writeThatChangesNothingDoesNotHoldUpTheHeartbeat() throws Exception {
		try (EtcdCoordinationStore coordination = new EtcdCoordinationStore(client, this.prefix, TIMEOUT)) {
			EtcdDaemonStore daemons = new EtcdDaemonStore(coordination, TIMEOUT);
			NodeRegistration node = new NodeRegistration("node-a", "node-a", "host", 1, Set.of("outbox"));
			coordination.tick(node, Map.of(), List.of(), LEASE, EXPIRY);
			client.getKVClient()
				.put(EtcdKeys.bytes(this.prefix + "-elsewhere"), EtcdKeys.bytes("x"))
				.get(5, TimeUnit.SECONDS);
			assertThat(daemons.drain("node-a", false)).isTrue();
			long sent = System.nanoTime();
			coordination.tick(node, Map.of(), List.of(), LEASE, EXPIRY);
			assertThat(Duration.ofNanos(System.nanoTime() - sent)).isLessThan(TIMEOUT);
		}
	}

	private static long lease(CompletableFuture<GetResponse> read) throws Exception {
		GetResponse response = read.get(5, TimeUnit.SECONDS);
		assertThat(response.getKvs()).hasSize(1);
		return response.getKvs().get(0).getLease();
	}

	/**
	 * A store measures an assignment's age from when it first saw the assignment in its
	 * state: another leader's store, which never saw it before, starts from its first
	 * read, so it never finds an assignment older than it is.
	 */
	@Test
	void assignmentsAgeIsMeasuredFromWhenThisStoreFirstSawItsState() throws Exception {
		EtcdDaemonStore first = new EtcdDaemonStore(client, this.prefix, TIMEOUT);
		FencingToken leader = lead("boss");
		assertThat(first.assign(leader, "boss", "outbox", "node-a", 0)).isEqualTo(leader.term());
		Assignment seen = only(first.read(EXPIRY));
		Thread.sleep(300);
		DaemonSnapshot later = first.read(EXPIRY);
		// The same instant, but for the drift of the wall clock against the monotonic
		// one.
		assertThat(Duration.between(seen.since(), only(later).since()).abs()).as("the same state, seen again")
			.isLessThan(Duration.ofMillis(5));
		assertThat(Duration.between(only(later).since(), later.now())).isGreaterThanOrEqualTo(Duration.ofMillis(300));
		DaemonSnapshot other = new EtcdDaemonStore(client, this.prefix, TIMEOUT).read(EXPIRY);
		assertThat(Duration.between(only(other).since(), other.now())).as("age seen by a store that never saw it")
			.isZero();
		assertThat(first.acknowledge("node-a", "outbox", leader.term())).isTrue();
		DaemonSnapshot acknowledged = first.read(EXPIRY);
		assertThat(only(acknowledged).state()).isEqualTo(AssignmentState.ACTIVE);
		assertThat(Duration.between(only(acknowledged).since(), acknowledged.now())).as("age of the new state")
			.isZero();
	}

	/**
	 * A daemon's generation is at least the term of the leader that assigns it, a
	 * revision, and not only the one after the last: after a restore from an older
	 * backup, whose assignments hold the generations of that backup, and the operator's
	 * step that takes etcd's revision past every one it gave, no generation comes again.
	 */
	@Test
	void generationRisesToTheTermOfTheLeaderThatAssigns() throws Exception {
		EtcdDaemonStore daemons = new EtcdDaemonStore(client, this.prefix, TIMEOUT);
		EtcdCoordinationStore coordination = new EtcdCoordinationStore(client, this.prefix, TIMEOUT);
		FencingToken first = new FencingToken("moves",
				Grants.acquire(coordination, "moves", "boss", LEASE).lease().term());
		assertThat(daemons.assign(first, "boss", "outbox", "node-a", 0)).isEqualTo(first.term());
		assertThat(daemons.release("node-a", "outbox", first.term())).isTrue();
		for (int i = 0; i < 10; i++) {
			client.getKVClient()
				.put(EtcdKeys.bytes(this.prefix + "-elsewhere"), EtcdKeys.bytes("x"))
				.get(5, TimeUnit.SECONDS);
		}
		assertThat(coordination.release("boss", Map.of("moves", first.term()))).containsExactly("moves");
		FencingToken second = new FencingToken("moves",
				Grants.acquire(coordination, "moves", "heir", LEASE).lease().term());
		assertThat(second.term()).isGreaterThan(first.term() + 10);
		assertThat(daemons.assign(second, "heir", "outbox", "node-a", first.term())).isEqualTo(second.term());
		coordination.close();
	}

	private FencingToken lead(String node) {
		EtcdCoordinationStore coordination = new EtcdCoordinationStore(client, this.prefix, TIMEOUT);
		return new FencingToken("moves", Grants.acquire(coordination, "moves", node, LEASE).lease().term());
	}

	private static Assignment only(DaemonSnapshot snapshot) {
		assertThat(snapshot.assignments()).hasSize(1);
		return snapshot.assignments().get(0);
	}

}
