package dev.leader.etcd;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import dev.leader.test.AbstractLogStoreContractTests;
import dev.leader.test.EtcdCluster;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.DeleteOption;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * {@link EtcdLogStore} against a real cluster of three etcd members, started once for the
 * class, with a key prefix of its own per test, beside the {@link EtcdCoordinationStore}
 * of the same prefix. It keeps every entry.
 */
class EtcdLogStoreContractTests extends AbstractLogStoreContractTests {

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
	protected Stores createStores() {
		this.prefix = "leader-test/" + UUID.randomUUID();
		return new Stores(new EtcdCoordinationStore(client, this.prefix, Duration.ofSeconds(3)),
				new EtcdLogStore(client, this.prefix, Duration.ofSeconds(3)));
	}

	@Override
	protected void destroyStores(Stores stores) throws Exception {
		// The root and the logs beside it.
		client.getKVClient()
			.delete(EtcdKeys.bytes(this.prefix), DeleteOption.builder().isPrefix(true).build())
			.get(5, TimeUnit.SECONDS);
	}

	@Override
	protected boolean hasRetention() {
		return false;
	}

}
