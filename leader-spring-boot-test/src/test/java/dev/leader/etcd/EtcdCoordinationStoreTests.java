package dev.leader.etcd;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import dev.leader.lease.CoordinationStore.AcquireResult;
import dev.leader.lease.CoordinationStore.ReleaseListener;
import dev.leader.lease.CoordinationStore.Tick;
import dev.leader.lease.LeaseState;
import dev.leader.node.NodeRegistration;
import dev.leader.test.EtcdCluster;
import dev.leader.test.Grants;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.LeaseOption;
import io.etcd.jetcd.options.PutOption;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.dao.DataAccessException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * {@link EtcdCoordinationStore} while etcd's own leader dies, each test on a three-member
 * cluster of its own.
 */
class EtcdCoordinationStoreTests {

	private static final NodeRegistration A = new NodeRegistration("node-a", "app-a", "host-a", 101);

	private static final NodeRegistration B = new NodeRegistration("node-b", "app-b", "host-b", 102);

	private static final Duration LEASE = Duration.ofSeconds(3);

	private EtcdCluster cluster;

	private Client client;

	private EtcdCoordinationStore store;

	@BeforeEach
	void startCluster() {
		this.cluster = EtcdCluster.start();
		this.client = Client.builder().endpoints(this.cluster.endpoints().toArray(String[]::new)).build();
		this.store = new EtcdCoordinationStore(this.client, "leader-test", Duration.ofSeconds(3));
	}

	@AfterEach
	void closeCluster() {
		try (EtcdCluster cluster = this.cluster;
				Client client = this.client;
				EtcdCoordinationStore store = this.store) {
			this.cluster = null;
			this.client = null;
		}
	}

	@Test
	void leaseKeepsItsTermAcrossTheDeathOfEtcdsLeaderAndIsRenewedReleasedAndAnnouncedAfterwards() throws Exception {
		this.store.tick(B, Map.of(), List.of(), LEASE, Duration.ofSeconds(10));
		LeaseState held = granted(Grants.acquire(this.store, "orders", A, Duration.ofSeconds(10)));
		List<String> woken = new CopyOnWriteArrayList<>();
		try (AutoCloseable listening = this.store.listen((group, successor) -> woken.add(group + ":" + successor))) {
			int leader = this.cluster.leaderIndex();
			this.cluster.member(leader).kill();
			Tick tick = await("a renewal through another member").atMost(Duration.ofSeconds(15))
				.ignoreExceptions()
				.until(() -> this.store.tick(A, Map.of("orders", held.term()), List.of("orders"),
						Duration.ofSeconds(10), Duration.ofSeconds(10)),
						(answer) -> answer.renewed().containsKey("orders"));
			assertThat(tick.renewed().get("orders").term()).isEqualTo(held.term());
			AcquireResult refused = Grants.acquire(this.store, "orders", B, Duration.ofSeconds(10));
			assertThat(refused.granted()).isFalse();
			assertThat(refused.lease()).isNotNull().extracting(LeaseState::holder).isEqualTo(A.id());
			assertThat(this.store.release(A.id(), Map.of("orders", held.term()))).containsExactly("orders");
			await("the release to be announced").atMost(Duration.ofSeconds(10))
				.until(() -> woken.contains("orders:" + B.id()));
			assertThat(granted(Grants.acquire(this.store, "orders", B, Duration.ofSeconds(10))).term())
				.isGreaterThan(held.term());
		}
	}

	/**
	 * etcd keeps the remaining time of its leases on its leader only: a new leader gives
	 * every lease its whole time to live again. A lease abandoned by its holder therefore
	 * outlives its duration when etcd's leader dies meanwhile, never the other way.
	 */
	@Test
	void abandonedLeaseLastsAtLeastItsDurationWhenEtcdsLeaderDies() {
		long sent = System.nanoTime();
		granted(Grants.acquire(this.store, "orders", A, LEASE));
		this.cluster.member(this.cluster.leaderIndex()).kill();
		await("the abandoned lease to expire").atMost(Duration.ofSeconds(30))
			.pollInterval(Duration.ofMillis(50))
			.ignoreExceptions()
			.until(() -> this.store.leases().stream().noneMatch(LeaseState::isHeld));
		Duration lasted = Duration.ofNanos(System.nanoTime() - sent);
		assertThat(lasted).as("lifetime of a lease of %d ms", LEASE.toMillis()).isGreaterThanOrEqualTo(LEASE);
	}

	/**
	 * A lease key deleted behind its holder's back, as a resumed etcd 3.4 leader may
	 * delete one early (etcd issues 12528 and 15247), ends the holder's leadership the
	 * moment its watch sees the deletion, not at its next heartbeat, and frees the group
	 * for the others at the same moment.
	 */
	@Test
	void leaseKeyDeletedBehindItsHoldersBackEndsItsLeadershipAtOnce() throws Exception {
		this.store.tick(B, Map.of(), List.of(), LEASE, Duration.ofSeconds(10));
		LeaseState held = granted(Grants.acquire(this.store, "orders", A, Duration.ofSeconds(10)));
		List<String> events = new CopyOnWriteArrayList<>();
		try (AutoCloseable listening = this.store.listen(new ReleaseListener() {

			@Override
			public void released(String group, @Nullable String successor) {
				events.add("released " + group + " to " + successor);
			}

			@Override
			public void sessionLost(Map<String, Long> terms) {
				events.add("lost " + terms);
			}

		})) {
			this.client.getKVClient().delete(new EtcdKeys("leader-test").lease("orders")).get(5, TimeUnit.SECONDS);
			await("the deletion to be announced").atMost(Duration.ofSeconds(5))
				.until(() -> events.contains("released orders to " + B.id()));
			assertThat(events).containsExactly("lost {orders=" + held.term() + "}", "released orders to " + B.id());
			assertThat(this.store.tick(A, Map.of("orders", held.term()), List.of(), LEASE, Duration.ofSeconds(10))
				.renewed()).isEmpty();
			assertThat(granted(Grants.acquire(this.store, "orders", B, Duration.ofSeconds(10))).term())
				.isGreaterThan(held.term());
		}
	}

	/**
	 * A grant joins the process's session, kept alive at the last heartbeat: the grant
	 * keeps it alive too, so that the lease's time left counts from the grant, as etcd
	 * does, not from that heartbeat.
	 */
	@Test
	void grantOnASessionKeptAliveEarlierIsGivenItsWholeDuration() throws Exception {
		Duration lease = Duration.ofSeconds(3);
		this.store.tick(A, Map.of(), List.of(), lease, lease);
		this.store.tick(A, Map.of(), List.of(), lease, lease);
		// The time under test: the heartbeat's window runs down meanwhile.
		Thread.sleep(600);
		LeaseState early = granted(this.store.acquire("orders", A, lease));
		assertThat(early.remaining()).isGreaterThan(lease.minusMillis(300));
		Thread.sleep(1000);
		LeaseState late = granted(this.store.acquire("payments", A, lease));
		assertThat(late.remaining()).isGreaterThan(lease.minusMillis(300));
	}

	/**
	 * A grant answered with the whole duration is trusted from the moment the acquire was
	 * sent for the lease duration less the safety margin: etcd must keep the key at least
	 * that long, even when the holder is cut off right after the grant and another node
	 * keeps trying. A grant that spared its session's keep-alive failed this (another
	 * node was granted 2.0 s after a 3 s grant).
	 */
	@Test
	void noOtherNodeIsGrantedWhileTheEngineTrustsAGrantOfAHolderCutOffAfterIt() throws Exception {
		Duration margin = Duration.ofMillis(200);
		this.store.tick(B, Map.of(), List.of(), LEASE, Duration.ofSeconds(10));
		this.store.tick(A, Map.of(), List.of(), LEASE, LEASE);
		this.store.tick(A, Map.of(), List.of(), LEASE, LEASE);
		// Within the renew interval after A's last heartbeat.
		Thread.sleep(1200);
		long sent = System.nanoTime();
		granted(this.store.acquire("orders", A, LEASE));
		// A sends nothing more; B keeps its node alive and tries.
		long grantedToB = await("the lease granted to B").atMost(Duration.ofSeconds(15))
			.pollInterval(Duration.ofMillis(50))
			.until(() -> {
				this.store.tick(B, Map.of(), List.of(), LEASE, Duration.ofSeconds(10));
				return this.store.acquire("orders", B, LEASE).granted() ? System.nanoTime() : 0L;
			}, (at) -> at != 0);
		assertThat(Duration.ofNanos(grantedToB - sent)).as("B granted after A's grant was sent")
			.isGreaterThanOrEqualTo(LEASE.minus(margin));
	}

	/**
	 * The first grant and release of a process are sent at its second heartbeat, with
	 * conditions that never hold, so that a hand-over does not pay for the first
	 * transaction of its JVM: they take no revision, and grant nothing.
	 */
	@Test
	void heartbeatsTakeNoRevisionOnceTheNodeIsRegistered() throws Exception {
		this.store.tick(A, Map.of(), List.of(), LEASE, LEASE);
		long registered = revision();
		for (int i = 0; i < 3; i++) {
			this.store.tick(A, Map.of(), List.of("warm-up"), LEASE, LEASE);
		}
		assertThat(revision()).isEqualTo(registered);
		assertThat(this.client.getKVClient()
			.get(new EtcdKeys("leader-test").root(), GetOption.builder().isPrefix(true).build())
			.get(5, TimeUnit.SECONDS)
			.getKvs()).noneMatch((kv) -> kv.getKey().toString().contains("warm-up"));
	}

	/**
	 * A graceful hand-over writes the lease key for the next node in the transaction that
	 * would delete it, and that node takes it with no write, as the next candidate of
	 * etcd's election recipe is elected by the deletion ahead of it: the watch wakes it,
	 * and its term is the hand-over's revision. Its time left counts from its session's
	 * last confirmation, which keeps the key; a session with less than half a duration
	 * left is kept alive first.
	 */
	@Test
	void leaseHandedOverIsTakenByTheNextNodeWithoutAWrite() throws Exception {
		this.store.tick(B, Map.of(), List.of(), LEASE, LEASE);
		long confirmed = System.nanoTime();
		LeaseState held = granted(Grants.acquire(this.store, "orders", A, LEASE));
		List<String> woken = new CopyOnWriteArrayList<>();
		try (AutoCloseable listening = this.store.listen((group, successor) -> woken.add(group + ":" + successor))) {
			assertThat(this.store.handOver(A.id(), Map.of("orders", held.term()))).containsExactly("orders");
			await("the hand-over to be announced").atMost(Duration.ofSeconds(5))
				.until(() -> woken.contains("orders:" + B.id()));
			long handedOver = revision();
			LeaseState taken = granted(this.store.acquire("orders", B, LEASE));
			assertThat(revision()).as("revision after the take").isEqualTo(handedOver);
			assertThat(taken.term()).isEqualTo(handedOver).isGreaterThan(held.term());
			assertThat(taken.remaining()).isLessThanOrEqualTo(LEASE.minusNanos(System.nanoTime() - confirmed));
			assertThat(this.store.leases()).singleElement()
				.extracting(LeaseState::holder, LeaseState::term)
				.containsExactly(B.id(), taken.term());
			Tick renewed = this.store.tick(B, Map.of("orders", taken.term()), List.of("orders"), LEASE, LEASE);
			assertThat(renewed.renewed()).containsOnlyKeys("orders");
			assertThat(this.store.tick(A, Map.of("orders", held.term()), List.of(), LEASE, LEASE).renewed()).isEmpty();
		}
	}

	@Test
	void leaseHandedToANodeWhoseSessionRanLowIsTakenWithAKeepAlive() throws Exception {
		this.store.tick(B, Map.of(), List.of(), LEASE, LEASE);
		LeaseState held = granted(Grants.acquire(this.store, "orders", A, LEASE));
		// B's session runs below half a duration meanwhile.
		Thread.sleep(1800);
		assertThat(this.store.handOver(A.id(), Map.of("orders", held.term()))).containsExactly("orders");
		await("the key written for B").atMost(Duration.ofSeconds(5))
			.until(() -> B.id().equals(this.store.leases().get(0).holder()));
		LeaseState taken = granted(this.store.acquire("orders", B, LEASE));
		assertThat(taken.remaining()).isGreaterThan(LEASE.minusMillis(300));
	}

	/**
	 * A node that does not take a lease handed to it, as one that does not take part in
	 * the group, is stopping, or cools down after a yield, gives it back at its second
	 * heartbeat after the hand-over, so that the others acquire it.
	 */
	@Test
	void leaseHandedToANodeThatDoesNotTakeItIsGivenBackAtItsSecondHeartbeat() throws Exception {
		this.store.tick(B, Map.of(), List.of(), LEASE, LEASE);
		LeaseState held = granted(Grants.acquire(this.store, "orders", A, LEASE));
		List<String> woken = new CopyOnWriteArrayList<>();
		try (AutoCloseable listening = this.store.listen((group, successor) -> woken.add(group + ":" + successor))) {
			assertThat(this.store.handOver(A.id(), Map.of("orders", held.term()))).containsExactly("orders");
			await("the hand-over to be announced").atMost(Duration.ofSeconds(5))
				.until(() -> woken.contains("orders:" + B.id()));
			this.store.tick(B, Map.of(), List.of(), LEASE, LEASE);
			assertThat(this.store.leases()).singleElement().extracting(LeaseState::holder).isEqualTo(B.id());
			this.store.tick(B, Map.of(), List.of(), LEASE, LEASE);
			await("the lease given back to be announced").atMost(Duration.ofSeconds(5))
				.until(() -> woken.contains("orders:" + A.id()));
			assertThat(this.store.leases()).singleElement().extracting(LeaseState::isHeld).isEqualTo(false);
			assertThat(granted(Grants.acquire(this.store, "orders", A, LEASE)).term()).isGreaterThan(held.term());
		}
	}

	/**
	 * A node's leases are released in one transaction, or in several where they are more
	 * than etcd takes operations in one (128 by default).
	 */
	@Test
	void handOverOfMoreLeasesThanEtcdTakesInOneTransactionHandsThemAllOver() {
		this.store.tick(B, Map.of(), List.of(), LEASE, Duration.ofSeconds(10));
		Map<String, Long> held = new HashMap<>();
		for (int i = 0; i < 130; i++) {
			held.put("group-" + i, granted(Grants.acquire(this.store, "group-" + i, A, Duration.ofSeconds(10))).term());
		}
		assertThat(this.store.handOver(A.id(), held)).containsExactlyInAnyOrderElementsOf(held.keySet());
		assertThat(this.store.leases()).hasSize(130)
			.allSatisfy((lease) -> assertThat(lease.holder()).isEqualTo(B.id()));
	}

	/**
	 * A lease handed over is attached to the session of the lease duration that the next
	 * node's key names, not to its node session: with a longer node expiry, the next node
	 * takes it with no write, and a frozen one holds it no longer than a lease (review:
	 * it held it for its 25 s node expiry, and took it with a second write).
	 */
	@Test
	void leaseHandedToANodeWithALongerNodeExpiryIsAttachedToItsLeaseSession() throws Exception {
		this.store.tick(B, Map.of(), List.of(), LEASE, Duration.ofSeconds(20));
		LeaseState held = granted(Grants.acquire(this.store, "orders", A, LEASE));
		assertThat(this.store.handOver(A.id(), Map.of("orders", held.term()))).containsExactly("orders");
		long handedOver = revision();
		KeyValue key = this.client.getKVClient()
			.get(new EtcdKeys("leader-test").lease("orders"))
			.get(5, TimeUnit.SECONDS)
			.getKvs()
			.get(0);
		assertThat(EtcdKeys.text(key.getValue())).isEqualTo(B.id());
		assertThat(this.client.getLeaseClient()
			.timeToLive(key.getLease(), LeaseOption.DEFAULT)
			.get(5, TimeUnit.SECONDS)
			.getGrantedTTL()).as("the time to live of the session the key is attached to").isEqualTo(3);
		assertThat(granted(this.store.acquire("orders", B, LEASE)).term()).isEqualTo(handedOver);
		assertThat(revision()).as("revision after the take").isEqualTo(handedOver);
	}

	/**
	 * A node whose key names no session for leases handed to it, as one of an earlier
	 * version, takes no hand-over: the lease is released, and every node may acquire it.
	 */
	@Test
	void handOverToANodeThatNamesNoSessionReleases() throws Exception {
		EtcdKeys keys = new EtcdKeys("leader-test");
		long session = this.client.getLeaseClient().grant(10).get(5, TimeUnit.SECONDS).getID();
		String older = EtcdKeys.encode(Arrays.asList("1/1/older", "node-old", "app", "host-old", "103", "", null, null,
				"2026-12-07T10:00:00Z", "2026-12-07T10:00:00Z"));
		this.client.getKVClient()
			.put(keys.node("node-old"), EtcdKeys.bytes(older), PutOption.builder().withLeaseId(session).build())
			.get(5, TimeUnit.SECONDS);
		LeaseState held = granted(Grants.acquire(this.store, "orders", A, LEASE));
		assertThat(this.store.handOver(A.id(), Map.of("orders", held.term()))).containsExactly("orders");
		assertThat(this.store.leases()).singleElement()
			.extracting(LeaseState::holder, LeaseState::term)
			.containsExactly(null, held.term());
	}

	/**
	 * A hand-over with no other node alive releases the lease.
	 */
	@Test
	void handOverWithNoOtherNodeAliveReleases() {
		LeaseState held = granted(Grants.acquire(this.store, "orders", A, LEASE));
		assertThat(this.store.handOver(A.id(), Map.of("orders", held.term()))).containsExactly("orders");
		assertThat(this.store.leases()).singleElement()
			.extracting(LeaseState::holder, LeaseState::term)
			.containsExactly(null, held.term());
	}

	private long revision() throws Exception {
		return this.client.getKVClient()
			.get(ByteSequence.from("any", StandardCharsets.UTF_8))
			.get(5, TimeUnit.SECONDS)
			.getHeader()
			.getRevision();
	}

	/**
	 * A cluster restored from an older backup gives its revisions again, and the store's
	 * terms are revisions: a node that saw a later revision refuses every answer below
	 * it, grants and renewals included, with a message that says what happened, until
	 * etcd's revision is past it again: a keep-alive answered below it is checked with a
	 * linearizable read.
	 */
	@Test
	void storeThatSawALaterRevisionRefusesEtcdRestoredFromAnOlderBackup() {
		this.store.tick(A, Map.of(), List.of(), LEASE, Duration.ofSeconds(10));
		Path backup = this.cluster.copyData();
		LeaseState held = granted(Grants.acquire(this.store, "orders", A, Duration.ofSeconds(10)));
		this.store.release(A.id(), Map.of("orders", held.term()));
		this.cluster.restoreData(backup);
		Throwable refused = await("the restored cluster to answer").atMost(Duration.ofSeconds(15))
			.pollInterval(Duration.ofMillis(100))
			.until(() -> {
				try {
					Grants.acquire(this.store, "orders", B, Duration.ofSeconds(10));
					return null;
				}
				catch (DataAccessException ex) {
					return (ex.getMessage().contains("below revision")) ? ex : null;
				}
			}, Objects::nonNull);
		assertThat(refused).hasMessageContaining("restored from an older backup");
		assertThatExceptionOfType(DataAccessException.class)
			.isThrownBy(() -> this.store.tick(A, Map.of(), List.of("orders"), LEASE, Duration.ofSeconds(10)))
			.withMessageContaining("below revision");
	}

	private static LeaseState granted(AcquireResult result) {
		assertThat(result.granted()).isTrue();
		assertThat(result.lease()).isNotNull();
		return result.lease();
	}

}
