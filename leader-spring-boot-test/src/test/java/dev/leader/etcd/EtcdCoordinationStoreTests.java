package dev.leader.etcd;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.leader.lease.CoordinationStore.AcquireResult;
import dev.leader.lease.CoordinationStore.Tick;
import dev.leader.lease.LeaseState;
import dev.leader.node.NodeRegistration;
import dev.leader.test.EtcdCluster;
import dev.leader.test.Grants;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.PutOption;
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
		try (EtcdCluster cluster = this.cluster; Client client = this.client) {
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
	 * A holder that asks again for its lease deletes the key and reserves the group
	 * before it creates the key again, which wakes nobody. One that dies in between
	 * leaves the reservation alone until its etcd lease runs out: meanwhile the group
	 * reads as held by that holder, and the end of the reservation wakes the listeners as
	 * a release does.
	 */
	@Test
	void reservationOfAHolderAskingAgainReadsAsHeldAndOnlyItsEndWithoutAGrantWakesTheListeners() throws Exception {
		this.store.tick(B, Map.of(), List.of(), LEASE, Duration.ofSeconds(10));
		List<String> woken = new CopyOnWriteArrayList<>();
		try (AutoCloseable listening = this.store.listen((group, successor) -> woken.add(group + ":" + successor))) {
			// The watch starts after listen() returns: a release shows when it runs.
			await("the watch to run").atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(200)).until(() -> {
				LeaseState warmUp = granted(Grants.acquire(this.store, "warm-up", A, LEASE));
				this.store.release(A.id(), Map.of("warm-up", warmUp.term()));
				return woken.contains("warm-up:" + B.id());
			});
			LeaseState first = granted(Grants.acquire(this.store, "orders", A, LEASE));
			LeaseState again = granted(Grants.acquire(this.store, "orders", A, LEASE));
			assertThat(again.term()).isGreaterThan(first.term());
			LeaseState marker = granted(Grants.acquire(this.store, "marker", A, LEASE));
			this.store.release(A.id(), Map.of("marker", marker.term()));
			await("the marker's release").atMost(Duration.ofSeconds(10))
				.until(() -> woken.contains("marker:" + B.id()));
			assertThat(woken).as("wake-ups up to the marker's release, which came after the second grant")
				.doesNotContain("orders:" + B.id());
			this.store.release(A.id(), Map.of("orders", again.term()));
			await("the release of orders").atMost(Duration.ofSeconds(10))
				.until(() -> woken.contains("orders:" + B.id()));
			woken.clear();
			// What a holder that died between the two steps leaves: the reservation
			// alone.
			long reservation = this.client.getLeaseClient().grant(2).get().getID();
			this.client.getKVClient()
				.put(new EtcdKeys("leader-test").reserved("orders"), EtcdKeys.bytes(A.id()),
						PutOption.builder().withLeaseId(reservation).build())
				.get();
			AcquireResult refused = Grants.acquire(this.store, "orders", B, LEASE);
			assertThat(refused.granted()).isFalse();
			assertThat(refused.lease()).isNotNull().satisfies((lease) -> {
				assertThat(lease.holder()).isEqualTo(A.id());
				assertThat(lease.isHeld()).isTrue();
				assertThat(lease.term()).isEqualTo(again.term());
			});
			await("the reservation's end").atMost(Duration.ofSeconds(10))
				.until(() -> woken.contains("orders:" + B.id()));
			assertThat(granted(Grants.acquire(this.store, "orders", B, LEASE)).term()).isGreaterThan(again.term());
		}
	}

	/**
	 * A cluster restored from an older backup gives its revisions again, and the store's
	 * terms are revisions: a node that saw a later revision refuses every answer below
	 * it, grants and renewals included, with a message that says what happened, until
	 * etcd's revision is past it again.
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
		// A store that saw nothing before the restore cannot tell.
		try (Client fresh = Client.builder().endpoints(this.cluster.endpoints().toArray(String[]::new)).build()) {
			LeaseState reused = granted(
					Grants.acquire(new EtcdCoordinationStore(fresh, "leader-test", Duration.ofSeconds(3)), "orders", B,
							Duration.ofSeconds(10)));
			assertThat(reused.term()).isLessThanOrEqualTo(held.term());
		}
	}

	private static LeaseState granted(AcquireResult result) {
		assertThat(result.granted()).isTrue();
		assertThat(result.lease()).isNotNull();
		return result.lease();
	}

}
