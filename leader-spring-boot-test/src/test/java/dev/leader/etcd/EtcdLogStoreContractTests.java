package dev.leader.etcd;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;

import dev.leader.FencingToken;
import dev.leader.log.Bookmark;
import dev.leader.log.LogEntry;
import dev.leader.test.AbstractLogStoreContractTests;
import dev.leader.test.EtcdCluster;
import dev.leader.test.Grants;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.DeleteOption;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link EtcdLogStore} against a real cluster of three etcd members, started once for the
 * class, with a key prefix of its own per test, beside the {@link EtcdCoordinationStore}
 * of the same prefix, with retention. Beside the contract, appends of two stores race on
 * the head.
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
		((EtcdCoordinationStore) stores.coordination()).close();
		// The root and the logs beside it.
		client.getKVClient()
			.delete(EtcdKeys.bytes(this.prefix), DeleteOption.builder().isPrefix(true).build())
			.get(5, TimeUnit.SECONDS);
	}

	@Override
	protected boolean hasRetention() {
		return true;
	}

	/**
	 * Two stores of the leader's node, as two processes would have, append at once: their
	 * appends race on the head key, where one of each pair of writes loses and reads the
	 * head again, and every index still goes to one append.
	 */
	@Test
	void appendsOfTwoStoresRacingOnTheHeadTakeDistinctConsecutiveIndexes() throws Exception {
		EtcdCoordinationStore coordination = new EtcdCoordinationStore(client, this.prefix, Duration.ofSeconds(3));
		long term = Grants.acquire(coordination, "race", "racer", Duration.ofSeconds(30)).lease().term();
		FencingToken token = new FencingToken("race", term);
		List<EtcdLogStore> stores = List.of(new EtcdLogStore(client, this.prefix, Duration.ofSeconds(3)),
				new EtcdLogStore(client, this.prefix, Duration.ofSeconds(3)));
		int perStore = 20;
		Map<Long, String> byIndex = new ConcurrentHashMap<>();
		ExecutorService executor = Executors.newFixedThreadPool(stores.size());
		try {
			CyclicBarrier start = new CyclicBarrier(stores.size());
			List<Future<?>> appenders = new ArrayList<>();
			for (int s = 0; s < stores.size(); s++) {
				EtcdLogStore store = stores.get(s);
				String name = "s" + s;
				appenders.add(executor.submit(() -> {
					start.await(10, TimeUnit.SECONDS);
					for (int i = 0; i < perStore; i++) {
						Bookmark entry = store.append(token, "racer", "set", name + "-" + i).entry();
						assertThat(entry).isNotNull();
						assertThat(byIndex.putIfAbsent(entry.index(), name + "-" + i)).isNull();
					}
					return null;
				}));
			}
			for (Future<?> appender : appenders) {
				appender.get(60, TimeUnit.SECONDS);
			}
		}
		finally {
			executor.shutdownNow();
		}
		List<Long> indexes = LongStream.rangeClosed(1, 2L * perStore).boxed().toList();
		assertThat(byIndex.keySet()).containsExactlyInAnyOrderElementsOf(indexes);
		List<LogEntry> entries = stores.get(0).read("race", 0, 100);
		assertThat(entries).extracting(LogEntry::index).containsExactlyElementsOf(indexes);
		assertThat(entries).allSatisfy((entry) -> assertThat(entry.payload()).isEqualTo(byIndex.get(entry.index())));
	}

}
