package dev.leader.lease;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import dev.leader.LeadershipGrantedEvent;
import dev.leader.etcd.EtcdCoordinationStore;
import dev.leader.node.NodeRegistration;
import dev.leader.test.EtcdCluster;
import io.etcd.jetcd.Client;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The graceful hand-over on etcd, between engines on a three-member cluster: the leader
 * hands its lease to the node that registered first after it, which takes it with no
 * write, and a node that will not take a lease handed to it gives it back at once. Nodes
 * heartbeat every 3 s, so a node that leads within a second was handed the lease, or
 * woken by its release; one that waited for a heartbeat would not.
 */
class EtcdHandOverTests {

	private static final LeaseSettings SETTINGS = new LeaseSettings(Duration.ofSeconds(10), Duration.ofSeconds(3),
			Duration.ofSeconds(2), Duration.ofMillis(200), Duration.ofSeconds(10), Duration.ofSeconds(5));

	private static final String GROUP = "default";

	private static final Duration AT_ONCE = Duration.ofSeconds(1);

	private static EtcdCluster cluster;

	private final List<AutoCloseable> resources = new ArrayList<>();

	private final Map<String, Long> grantedAt = new ConcurrentHashMap<>();

	@BeforeAll
	static void startCluster() {
		cluster = EtcdCluster.start();
	}

	@AfterAll
	static void stopCluster() {
		cluster.close();
	}

	@AfterEach
	void stopEngines() throws Exception {
		for (int i = this.resources.size() - 1; i >= 0; i--) {
			this.resources.get(i).close();
		}
	}

	@Test
	void leaderHandsTheLeaseToTheNodeThatRegisteredFirstAfterIt() throws Exception {
		String prefix = prefix();
		LeaderEngine a = start(prefix, "a", Set.of(GROUP));
		assertThat(a.awaitLeadership(GROUP, Duration.ofSeconds(10))).isTrue();
		LeaderEngine b = start(prefix, "b", Set.of(GROUP));
		LeaderEngine c = start(prefix, "c", Set.of(GROUP));
		long stopped = stop(a);
		await().atMost(AT_ONCE).until(() -> b.isLeader(GROUP));
		assertThat(c.isLeader(GROUP)).isFalse();
		assertThat(TimeUnit.NANOSECONDS.toMillis(this.grantedAt.get("b") - stopped))
			.as("stop of the leader -> the successor's grant, with heartbeats every 3 s")
			.isLessThan(AT_ONCE.toMillis());
	}

	@Test
	void nodeThatIsStoppingGivesALeaseHandedToItBackAtOnce() throws Exception {
		String prefix = prefix();
		LeaderEngine a = start(prefix, "a", Set.of(GROUP));
		assertThat(a.awaitLeadership(GROUP, Duration.ofSeconds(10))).isTrue();
		LeaderEngine b = start(prefix, "b", Set.of(GROUP));
		LeaderEngine c = start(prefix, "c", Set.of(GROUP));
		// b stays registered, heartbeats on and asks for no lease: the first to be named.
		b.relinquish();
		long stopped = stop(a);
		await().atMost(AT_ONCE).until(() -> c.isLeader(GROUP));
		assertThat(b.isLeader(GROUP)).isFalse();
		assertThat(TimeUnit.NANOSECONDS.toMillis(this.grantedAt.get("c") - stopped))
			.as("stop of the leader -> the grant of the node after the stopping one")
			.isLessThan(AT_ONCE.toMillis());
	}

	@Test
	void nodeThatDoesNotTakePartInTheGroupGivesALeaseHandedToItBackAtOnce() throws Exception {
		String prefix = prefix();
		LeaderEngine a = start(prefix, "a", Set.of(GROUP));
		assertThat(a.awaitLeadership(GROUP, Duration.ofSeconds(10))).isTrue();
		start(prefix, "b", Set.of("reports"));
		LeaderEngine c = start(prefix, "c", Set.of(GROUP));
		long stopped = stop(a);
		await().atMost(AT_ONCE).until(() -> c.isLeader(GROUP));
		assertThat(TimeUnit.NANOSECONDS.toMillis(this.grantedAt.get("c") - stopped))
			.as("stop of the leader -> the grant of the node after the one outside the group")
			.isLessThan(AT_ONCE.toMillis());
	}

	private long stop(LeaderEngine engine) {
		long stopped = System.nanoTime();
		engine.stop();
		return stopped;
	}

	private LeaderEngine start(String prefix, String id, Set<String> groups) {
		Client client = Client.builder().endpoints(cluster.endpoints().toArray(String[]::new)).build();
		this.resources.add(client);
		EtcdCoordinationStore store = new EtcdCoordinationStore(client, prefix, Duration.ofSeconds(3));
		this.resources.add(store);
		NodeRegistration node = new NodeRegistration(id, id, "host-" + id, 100 + this.resources.size(), Set.of());
		LeaderEngine engine = new LeaderEngine(store, SETTINGS, node, groups, (event) -> {
			if (event instanceof LeadershipGrantedEvent granted && granted.group().equals(GROUP)) {
				this.grantedAt.put(id, System.nanoTime());
			}
		});
		this.resources.add(engine::stop);
		engine.start();
		// Registered, in the order of the starts.
		await().atMost(Duration.ofSeconds(10))
			.until(() -> engine.members().stream().anyMatch((member) -> member.id().equals(id)));
		return engine;
	}

	private static String prefix() {
		return "hand-over/" + System.nanoTime();
	}

}
