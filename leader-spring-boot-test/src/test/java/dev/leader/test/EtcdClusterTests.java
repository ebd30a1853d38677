package dev.leader.test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

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

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Tests of {@link EtcdCluster} with real faults, each on a three-member cluster of its
 * own, through etcd's Java client.
 */
class EtcdClusterTests {

	private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(5);

	private EtcdCluster cluster;

	private Client client;

	@BeforeEach
	void startCluster() {
		this.cluster = EtcdCluster.start();
		this.client = clientOf(this.cluster.endpoints());
	}

	@AfterEach
	void closeCluster() {
		try (EtcdCluster cluster = this.cluster; Client client = this.client) {
			this.cluster = null;
			this.client = null;
		}
	}

	@Test
	void valueWrittenToTheClusterIsReadBack() throws Exception {
		assertThat(this.cluster.endpoints()).hasSize(3)
			.allMatch((endpoint) -> endpoint.startsWith("http://127.0.0.1:"));
		assertThat(this.cluster.members()).extracting(EtcdCluster.Member::pid).doesNotHaveDuplicates();
		put("greeting", "hello");
		assertThat(get(this.client, "greeting")).isEqualTo("hello");
	}

	@Test
	void writesSucceedAfterFollowerIsKilled() throws Exception {
		int leader = this.cluster.leaderIndex();
		EtcdCluster.Member follower = this.cluster.member((leader + 1) % 3);
		follower.kill();
		assertThat(follower.isRunning()).isFalse();
		put("after-follower-crash", "written");
		assertThat(get(this.client, "after-follower-crash")).isEqualTo("written");
		assertThat(this.cluster.leaderIndex()).isEqualTo(leader);
	}

	@Test
	void newLeaderIsElectedAfterLeaderIsKilledAndRestartedMemberRejoins() throws Exception {
		int leader = this.cluster.leaderIndex();
		EtcdCluster.Member killed = this.cluster.member(leader);
		killed.kill();
		int next = await("a new leader").atMost(Duration.ofSeconds(15))
			.until(this.cluster::leaderIndex, (index) -> index != leader);
		assertThat(next).isNotEqualTo(leader);
		put("after-leader-crash", "written");
		assertThat(get(this.client, "after-leader-crash")).isEqualTo("written");
		killed.restart();
		try (Client alone = clientOf(List.of(killed.endpoint()))) {
			// A serializable read answers from the member's own store: the write made
			// while
			// it was down reached it once it rejoined.
			await("the restarted member to catch up").atMost(Duration.ofSeconds(15))
				.pollInterval(Duration.ofMillis(100))
				.until(() -> serializableGet(alone, "after-leader-crash"), (value) -> "written".equals(value));
		}
	}

	@Test
	void clusterKeepsServingWhileMemberIsPausedAndAfterItResumes() throws Exception {
		int leader = this.cluster.leaderIndex();
		EtcdCluster.Member paused = this.cluster.member((leader + 1) % 3);
		long pid = paused.pid();
		paused.pause();
		put("while-paused", "written");
		assertThat(get(this.client, "while-paused")).isEqualTo("written");
		paused.resume();
		assertThat(paused.pid()).isEqualTo(pid);
		put("after-resume", "written");
		try (Client alone = clientOf(List.of(paused.endpoint()))) {
			await("the resumed member to catch up").atMost(Duration.ofSeconds(15))
				.pollInterval(Duration.ofMillis(100))
				.until(() -> serializableGet(alone, "after-resume"), (value) -> "written".equals(value));
		}
	}

	@Test
	void keyOfLeaseThatIsNotKeptAliveDisappearsAfterItsTtl() throws Exception {
		long requested = System.nanoTime();
		long lease = this.client.getLeaseClient()
			.grant(2)
			.get(REQUEST_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
			.getID();
		this.client.getKVClient()
			.put(bytes("leased"), bytes("held"), PutOption.builder().withLeaseId(lease).build())
			.get(REQUEST_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
		assertThat(get(this.client, "leased")).isEqualTo("held");
		await("the leased key to expire").atMost(Duration.ofSeconds(10))
			.pollInterval(Duration.ofMillis(100))
			.until(() -> get(this.client, "leased") == null);
		// etcd counts the TTL from the grant, which came after the request.
		assertThat(Duration.ofNanos(System.nanoTime() - requested)).isGreaterThanOrEqualTo(Duration.ofSeconds(2));
		assertThat(this.client.getLeaseClient()
			.timeToLive(lease, LeaseOption.DEFAULT)
			.get(REQUEST_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
			.getTTL()).isEqualTo(-1);
	}

	private void put(String key, String value) throws Exception {
		this.client.getKVClient().put(bytes(key), bytes(value)).get(REQUEST_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
	}

	private static @Nullable String get(Client client, String key) throws Exception {
		List<KeyValue> found = client.getKVClient()
			.get(bytes(key))
			.get(REQUEST_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
			.getKvs();
		return found.isEmpty() ? null : found.get(0).getValue().toString(StandardCharsets.UTF_8);
	}

	private static @Nullable String serializableGet(Client client, String key) throws Exception {
		List<KeyValue> found = client.getKVClient()
			.get(bytes(key), GetOption.builder().withSerializable(true).build())
			.get(REQUEST_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
			.getKvs();
		return found.isEmpty() ? null : found.get(0).getValue().toString(StandardCharsets.UTF_8);
	}

	private static Client clientOf(List<String> endpoints) {
		return Client.builder().endpoints(endpoints.toArray(String[]::new)).build();
	}

	private static ByteSequence bytes(String text) {
		return ByteSequence.from(text, StandardCharsets.UTF_8);
	}

}
