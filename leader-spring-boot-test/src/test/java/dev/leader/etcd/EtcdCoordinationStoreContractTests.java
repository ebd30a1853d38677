package dev.leader.etcd;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import dev.leader.lease.CoordinationStore;
import dev.leader.test.AbstractCoordinationStoreContractTests;
import dev.leader.test.EtcdCluster;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.DeleteOption;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

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
		((EtcdCoordinationStore) store).close();
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

}
