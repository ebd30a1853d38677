package dev.leader.etcd;

import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import dev.leader.lease.CoordinationStore;
import dev.leader.lease.CoordinationStore.AcquireResult;
import dev.leader.test.AbstractCoordinationStoreContractTests;
import dev.leader.test.EtcdCluster;
import dev.leader.test.Grants;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.DeleteOption;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@link EtcdCoordinationStore} against a real cluster of three etcd members, started
 * once for the class, with a key prefix of its own per test. Its terms are revisions of
 * the cluster, which rise but not by one.
 */
class EtcdCoordinationStoreContractTests extends AbstractCoordinationStoreContractTests {

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
	protected CoordinationStore createStore() {
		this.prefix = "leader-test/" + UUID.randomUUID();
		return new EtcdCoordinationStore(client, this.prefix, Duration.ofSeconds(3));
	}

	@Override
	protected void destroyStore(CoordinationStore store) throws Exception {
		client.getKVClient()
			.delete(EtcdKeys.bytes(this.prefix), DeleteOption.builder().isPrefix(true).build())
			.get(5, TimeUnit.SECONDS);
	}

	@Override
	protected boolean supportsReleaseNotifications() {
		return true;
	}

	@Override
	protected boolean termsRiseByOne() {
		return false;
	}

	/**
	 * A lease key deleted before the expiry its holder recorded, as a resumed etcd 3.4
	 * leader may do, is not granted to another node before that expiry; but a holder's
	 * clock hours ahead holds the group up for one duration after the record was first
	 * seen, no longer.
	 */
	@Test
	void leaseDeletedBeforeTheExpiryItsHolderRecordedWaitsForItButNeverLongerThanOneDuration() throws Exception {
		EtcdCoordinationStore store = new EtcdCoordinationStore(client, this.prefix, Duration.ofSeconds(3));
		EtcdKeys keys = new EtcdKeys(this.prefix);
		Duration lease = Duration.ofSeconds(2);
		long term = Grants.acquire(store, "early", "node-a", lease).lease().term();
		client.getKVClient()
			.put(keys.term("early"),
					new EtcdKeys.TermRecord(term, "node-a", Instant.now().plus(Duration.ofHours(2))).toBytes())
			.get(5, TimeUnit.SECONDS);
		client.getKVClient().delete(keys.lease("early")).get(5, TimeUnit.SECONDS);
		long deleted = System.nanoTime();
		AcquireResult refused = Grants.acquire(store, "early", "node-b", lease);
		assertThat(refused.granted()).as("a grant right after the key was deleted").isFalse();
		assertThat(refused.lease()).isNotNull().satisfies((state) -> {
			assertThat(state.holder()).isEqualTo("node-a");
			assertThat(state.remaining()).isPositive().isLessThanOrEqualTo(lease);
		});
		AcquireResult granted = await().atMost(lease.plusSeconds(3))
			.until(() -> Grants.acquire(store, "early", "node-b", lease), AcquireResult::granted);
		assertThat(Duration.ofNanos(System.nanoTime() - deleted)).as("the wait")
			.isGreaterThanOrEqualTo(lease.minusMillis(500));
		assertThat(granted.lease().term()).isGreaterThan(term);
	}

}
