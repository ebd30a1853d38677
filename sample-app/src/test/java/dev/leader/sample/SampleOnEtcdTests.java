package dev.leader.sample;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import dev.leader.log.Bookmark;
import dev.leader.sample.RatesClient.Answer;
import dev.leader.test.Cluster;
import dev.leader.test.EtcdCluster;
import dev.leader.test.FencedWrites;
import dev.leader.test.FencedWrites.Write;
import dev.leader.test.NodeEvent;
import dev.leader.test.NodeEvent.Type;
import dev.leader.test.NodeProcess;
import dev.leader.test.TemporaryPostgres;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.jdbc.core.simple.JdbcClient;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Three nodes of the sample application, each a JVM of its own, coordinating through a
 * three-member etcd cluster of the test's own ({@link EtcdCluster}, SIGKILL and restart
 * per member) with {@code --leader.etcd.endpoints}, and keeping their own tables in a
 * fresh PostgreSQL schema ({@link Cluster}): one leader per group, the daemons spread
 * over the nodes, rates written round-robin and read at followers with the write's
 * bookmark never older than the write, the etcd leader's death changes neither leader nor
 * term, a killed leader is replaced under a higher term within the lease and half a
 * second and its daemon moves to a live node, and a leader paused past its lease has its
 * writes rejected by the fences table once it resumes. Each test has an etcd prefix of
 * its own.
 */
class SampleOnEtcdTests {

	private static final String BILLING = "billing";

	private static final List<String> GROUPS = List.of("default", BILLING);

	/**
	 * Whole seconds, since etcd counts a lease's time to live in seconds, and room in the
	 * safe window (the lease less 200 ms) for etcd's election of a new leader, which took
	 * up to 2.6 s here (docs/etcd.md, under faults), and a call to the killed member that
	 * fails before the calls go to another: with 4 s, a node lost its lease once.
	 */
	private static final Duration LEASE = Duration.ofSeconds(5);

	private static final Duration STARTUP = Duration.ofSeconds(90);

	private static final Duration TAKEOVER = LEASE.plusSeconds(3);

	private static final String SETTLEMENTS = "SELECT 'settlement_batches', term, node_id FROM settlement_batches ORDER BY id";

	private static final String INVOICES = "SELECT 'invoices', term, node_id FROM invoices ORDER BY id";

	private static @Nullable EtcdCluster etcd;

	@RegisterExtension
	final Cluster cluster = Cluster.of(SampleApplication.class)
		.withProperty("leader.lease.duration", LEASE.toSeconds() + "s")
		.withProperty("leader.lease.renew-interval", "500ms")
		.withProperty("leader.lease.retry-interval", "500ms")
		.withProperty("leader.node.expiry", LEASE.toSeconds() + "s")
		.withProperty("leader.daemons.settle-window", "2s")
		.withProperty("sample.settlement.interval", "100ms")
		.withProperty("sample.invoices.step", "100ms")
		.withProperty("sample.outbox.interval", "200ms")
		.withProperty("sample.reports.interval", "500ms")
		// The test yields billing through the endpoint: loopback only.
		.withProperty("management.endpoint.leadership.access", "unrestricted");

	private final String prefix = "sample-" + System.nanoTime();

	private final Map<String, String> baseUrls = new HashMap<>();

	private final RatesClient rates = new RatesClient(Duration.ofSeconds(20));

	private final HttpClient http = HttpClient.newBuilder()
		.version(HttpClient.Version.HTTP_1_1)
		.connectTimeout(Duration.ofSeconds(2))
		.build();

	@BeforeAll
	static void startEtcd() {
		etcd = EtcdCluster.start(3);
	}

	@AfterAll
	static void stopEtcd() {
		if (etcd != null) {
			etcd.close();
		}
	}

	// A member killed by a test that failed before its restart rejoins for the next.
	@AfterEach
	void restartKilledMembers() {
		for (EtcdCluster.Member member : etcd().members()) {
			if (!member.isRunning()) {
				member.restart();
			}
		}
	}

	@Test
	void oneLeaderPerGroupDaemonsSpreadFreshFollowerReadsEtcdLeaderLossKeepsTheLeaderAndAKillIsTakenOverInTime()
			throws Exception {
		List<NodeProcess> nodes = startNodes("node-a", "node-b", "node-c");
		for (String group : GROUPS) {
			awaitSingleLeader(group, STARTUP);
		}
		Map<String, Assignment> spread = awaitDaemonsOnDistinctLiveNodes();
		assertThat(spread).hasSize(2);

		readYourWritesAtFollowers(nodes, 200);

		// The node to kill leads billing and runs a daemon: with two daemons on two of
		// three nodes, a leader that runs none yields billing to one that does.
		NodeProcess leader = awaitSingleLeader(BILLING, STARTUP);
		if (spread.values().stream().noneMatch((assignment) -> assignment.node().equals(leader.nodeId()))) {
			long yieldedTerm = grantOf(leader).term();
			post(leader, "/actuator/leadership/" + BILLING);
			this.cluster.awaitGrant(BILLING, yieldedTerm, TAKEOVER);
		}
		NodeProcess victim = awaitSingleLeader(BILLING, TAKEOVER);
		spread = awaitDaemonsOnDistinctLiveNodes();
		assertThat(spread.values()).extracting(Assignment::node).contains(victim.nodeId());

		etcdLeaderLossChangesNeitherLeaderNorTerm();

		long term = grantOf(victim).term();
		String daemon = spread.values()
			.stream()
			.filter((assignment) -> assignment.node().equals(victim.nodeId()))
			.findFirst()
			.orElseThrow()
			.daemon();
		long generation = spread.get(daemon).generation();
		long killedAt = System.nanoTime();
		victim.kill9();
		NodeEvent takeover = this.cluster.awaitGrant(BILLING, term, TAKEOVER);
		assertThat(takeover.node()).isNotEqualTo(victim.nodeId());
		assertThat(takeover.term()).isGreaterThan(term);
		// From the kill to the successor's own report of its grant, on the machine's
		// monotonic clock.
		Duration took = Duration.ofNanos(takeover.nanoTime() - killedAt);
		System.out.println("Takeover of " + BILLING + " after kill -9 of its leader: " + took.toMillis() + " ms (lease "
				+ LEASE.toMillis() + " ms), term " + term + " -> " + takeover.term());
		assertThat(took).isLessThanOrEqualTo(LEASE.plusMillis(500));

		Map<String, Assignment> moved = awaitDaemonsOnDistinctLiveNodes();
		assertThat(moved.values()).extracting(Assignment::node).doesNotContain(victim.nodeId());
		assertThat(moved.get(daemon).generation()).isGreaterThan(generation);
	}

	@Test
	void pausedLeaderHasItsWritesRejectedByTheFencesTableOnceItResumes() throws Exception {
		startNodes("node-a", "node-b", "node-c");
		NodeProcess leader = awaitSingleLeader(BILLING, STARTUP);
		long term = grantOf(leader).term();
		awaitWritesUnder(SETTLEMENTS, term, 1);
		awaitWritesUnder(INVOICES, term, 1);

		leader.sigstop();
		NodeEvent takeover = this.cluster.awaitGrant(BILLING, term, TAKEOVER);
		assertThat(takeover.node()).isNotEqualTo(leader.nodeId());
		// The new leader's first writes advance both fences past the paused term.
		awaitWritesUnder(SETTLEMENTS, takeover.term(), 1);
		int invoicesBeforeThaw = awaitWritesUnder(INVOICES, takeover.term(), 1);
		leader.sigcont();
		leader.awaitEvent("the revoke of its term", (event) -> event.is(Type.REVOKED, BILLING) && event.term() == term,
				TAKEOVER);
		// The invoice run took its token before the pause and writes under it without
		// asking again: its first write after the pause meets the fence.
		JsonNode rejected = await().atMost(TAKEOVER)
			.ignoreExceptions()
			.until(() -> rejectedInvoiceWrite(leader, term), (write) -> write != null);
		assertThat(rejected.get("group").asString()).isEqualTo(BILLING);
		assertThat(rejected.get("currentTerm").asLong()).isGreaterThanOrEqualTo(takeover.term());
		assertThat(rejected.get("message").asString()).contains("fence 'invoices'");
		awaitWritesUnder(INVOICES, takeover.term(), invoicesBeforeThaw + 5);

		for (String writes : List.of(SETTLEMENTS, INVOICES)) {
			FencedWrites fenced = FencedWrites.read(this.cluster.dataSource(), writes).assertNoStaleWriteCommitted();
			assertThat(fenced.writesOf(leader.nodeId())).extracting(Write::term).containsOnly(term);
		}
		// The fences the database keeps: the resources' highest terms, which only the
		// new leader reached.
		Map<String, Long> fences = JdbcClient.create(this.cluster.dataSource())
			.sql("SELECT resource, term FROM leader_fences WHERE resource IN ('invoices', 'settlement_batches')")
			.query((rows) -> {
				Map<String, Long> terms = new TreeMap<>();
				while (rows.next()) {
					terms.put(rows.getString(1), rows.getLong(2));
				}
				return terms;
			});
		assertThat(fences).containsOnlyKeys("invoices", "settlement_batches");
		assertThat(fences.values()).allSatisfy((fence) -> assertThat(fence).isGreaterThanOrEqualTo(takeover.term()));
	}

	// One live node believes it leads, and every live node reads it as the leader from
	// etcd (the test kit's Cluster compares with the lease's row, which etcd has not).
	private NodeProcess awaitSingleLeader(String group, Duration timeout) {
		return await("a single leader of " + group).atMost(timeout)
			.pollInterval(Duration.ofMillis(50))
			.ignoreExceptions()
			.until(() -> {
				List<NodeProcess> live = this.cluster.nodes().stream().filter(NodeProcess::isAlive).toList();
				List<NodeProcess> leaders = live.stream().filter((node) -> node.isLeader(group)).toList();
				if (leaders.size() != 1) {
					return null;
				}
				for (NodeProcess node : live) {
					JsonNode seen = leadership(node).get("groups").get(group);
					if (!leaders.get(0).nodeId().equals(seen.get("leader").asString())) {
						return null;
					}
				}
				return leaders.get(0);
			}, Objects::nonNull);
	}

	private static EtcdCluster etcd() {
		EtcdCluster cluster = etcd;
		assertThat(cluster).as("the etcd cluster of @BeforeAll").isNotNull();
		return cluster;
	}

	private List<NodeProcess> startNodes(String... nodeIds) throws IOException {
		List<NodeProcess> nodes = new ArrayList<>();
		String endpoints = String.join(",", etcd().endpoints());
		for (String nodeId : nodeIds) {
			int port = TemporaryPostgres.freePort();
			this.baseUrls.put(nodeId, "http://127.0.0.1:" + port);
			nodes.add(this.cluster.start(nodeId, Map.of("leader.etcd.endpoints", endpoints, "leader.etcd.prefix",
					this.prefix, "server.port", Integer.toString(port), "server.address", "127.0.0.1"), Map.of()));
		}
		for (NodeProcess node : nodes) {
			node.awaitReady(STARTUP);
		}
		// Each node has seen the others join, so that it notices when one leaves.
		for (NodeProcess node : nodes) {
			for (NodeProcess other : nodes) {
				if (other != node) {
					node.awaitEvent(other.nodeId() + " joining",
							(event) -> event.type() == Type.JOINED && other.nodeId().equals(event.node()), STARTUP);
				}
			}
		}
		return nodes;
	}

	// Each write, round-robin over the nodes (two thirds forwarded to the leader), read
	// at once at a follower with the write's bookmark: the follower answers the value
	// just written, never an older one.
	private void readYourWritesAtFollowers(List<NodeProcess> nodes, int writes) throws Exception {
		NodeProcess leader = awaitSingleLeader(BILLING, STARTUP);
		List<NodeProcess> followers = nodes.stream().filter((node) -> node != leader).toList();
		List<String> codes = List.of("EUR", "USD", "CHF");
		for (int i = 1; i <= writes; i++) {
			String code = codes.get(i % codes.size());
			String rate = "1." + String.format("%04d", i);
			String writer = url(nodes.get(i % nodes.size()));
			Answer put = this.rates.put(writer, code, rate);
			assertThat(put.status()).as("PUT %d at %s: %s", i, writer, put.body()).isEqualTo(200);
			assertThat(put.header("Served-By")).isEqualTo(leader.nodeId());
			Bookmark written = Bookmark.parse(put.header("Leader-Bookmark"));
			String follower = url(followers.get(i % followers.size()));
			Answer get = this.rates.get(follower, code, Map.of("Leader-Bookmark", written.toString()));
			assertThat(get.status()).as("GET %d at %s after %s: %s", i, follower, written, get.body()).isEqualTo(200);
			assertThat(get.header("Served-By")).isNotEqualTo(leader.nodeId());
			assertThat(get.rate()).as("GET %d at %s after %s", i, follower, written).isEqualTo(rate);
			assertThat(Bookmark.parse(get.header("Leader-Bookmark")).index()).isGreaterThanOrEqualTo(written.index());
		}
	}

	// SIGKILL of the etcd member that leads etcd: the others elect a new one, and the
	// nodes' leases live on through it. No node sees a grant, a revoke or a change of
	// leader or term of any group from the kill until a lease after the new etcd leader
	// answers; then the member restarts and rejoins.
	private void etcdLeaderLossChangesNeitherLeaderNorTerm() throws Exception {
		Map<String, NodeEvent> before = new TreeMap<>();
		for (String group : GROUPS) {
			before.put(group, grantOf(awaitSingleLeader(group, TAKEOVER), group));
		}
		EtcdCluster.Member etcdLeader = etcd().member(etcd().leaderIndex());
		long killedAt = System.nanoTime();
		etcdLeader.kill();
		int next = etcd().leaderIndex();
		assertThat(next).isNotEqualTo(etcdLeader.index());
		long electedAt = System.nanoTime();
		Thread.sleep(LEASE.toMillis() + 500);
		System.out.println("etcd leader " + etcdLeader + " killed; member-" + next + " led after "
				+ Duration.ofNanos(electedAt - killedAt).toMillis() + " ms");
		List<NodeEvent> changes = this.cluster.nodes()
			.stream()
			.filter(NodeProcess::isAlive)
			.flatMap((node) -> node.events().stream())
			.filter((event) -> event.nanoTime() > killedAt && event.group() != null && GROUPS.contains(event.group()))
			.filter((event) -> Set.of(Type.GRANTED, Type.REVOKED, Type.CHANGED).contains(event.type()))
			.toList();
		assertThat(changes).as("leadership events after the etcd leader was killed").isEmpty();
		for (String group : GROUPS) {
			NodeEvent granted = before.get(group);
			NodeProcess leader = awaitSingleLeader(group, TAKEOVER);
			assertThat(leader.nodeId()).isEqualTo(granted.node());
			assertThat(grantOf(leader, group).term()).isEqualTo(granted.term());
			// As every live node reads it from etcd now.
			for (NodeProcess node : this.cluster.nodes().stream().filter(NodeProcess::isAlive).toList()) {
				JsonNode seen = leadership(node).get("groups").get(group);
				assertThat(seen.get("leader").asString()).as("%s of %s", group, node.nodeId())
					.isEqualTo(granted.node());
				assertThat(seen.get("term").asLong()).as("%s of %s", group, node.nodeId()).isEqualTo(granted.term());
			}
		}
		etcdLeader.restart();
	}

	// Both daemons active, each on another live node, as every live node reads them.
	private Map<String, Assignment> awaitDaemonsOnDistinctLiveNodes() {
		List<NodeProcess> live = this.cluster.nodes().stream().filter(NodeProcess::isAlive).toList();
		List<String> liveIds = live.stream().map(NodeProcess::nodeId).toList();
		return await().atMost(Duration.ofSeconds(60))
			.pollInterval(Duration.ofMillis(200))
			.ignoreExceptions()
			.until(() -> {
				Map<String, Assignment> agreed = null;
				for (NodeProcess node : live) {
					Map<String, Assignment> seen = activeAssignments(node);
					if (agreed != null && !agreed.equals(seen)) {
						return null;
					}
					agreed = seen;
				}
				return agreed;
			}, (assignments) -> assignments != null && assignments.size() == 2
					&& assignments.values().stream().map(Assignment::node).distinct().count() == 2
					&& assignments.values().stream().allMatch((assignment) -> liveIds.contains(assignment.node())));
	}

	private Map<String, Assignment> activeAssignments(NodeProcess node) throws Exception {
		Map<String, Assignment> active = new TreeMap<>();
		for (JsonNode assignment : leadership(node).get("assignments")) {
			if (assignment.get("state").asString().equals("ACTIVE")) {
				active.put(assignment.get("daemon").asString(), new Assignment(assignment.get("daemon").asString(),
						assignment.get("node").asString(), assignment.get("generation").asLong()));
			}
		}
		return active;
	}

	private JsonNode leadership(NodeProcess node) throws Exception {
		HttpResponse<String> response = this.http
			.send(HttpRequest.newBuilder(URI.create(url(node) + "/actuator/leadership"))
				.timeout(Duration.ofSeconds(5))
				.header("Accept", "application/json")
				.build(), HttpResponse.BodyHandlers.ofString());
		assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
		return JsonMapper.builder().build().readTree(response.body());
	}

	private void post(NodeProcess node, String path) throws Exception {
		HttpResponse<String> response = this.http.send(HttpRequest.newBuilder(URI.create(url(node) + path))
			.timeout(Duration.ofSeconds(5))
			.POST(HttpRequest.BodyPublishers.noBody())
			.build(), HttpResponse.BodyHandlers.ofString());
		assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
	}

	private @Nullable JsonNode rejectedInvoiceWrite(NodeProcess node, long heldTerm) throws Exception {
		HttpResponse<String> response = this.http
			.send(HttpRequest.newBuilder(URI.create(url(node) + "/rejected-writes"))
				.timeout(Duration.ofSeconds(2))
				.build(), HttpResponse.BodyHandlers.ofString());
		assertThat(response.statusCode()).isEqualTo(200);
		return JsonMapper.builder()
			.build()
			.readTree(response.body())
			.valueStream()
			.filter((write) -> write.get("writer").asString().equals("invoice-run"))
			.filter((write) -> write.get("heldTerm").asLong() == heldTerm)
			.findFirst()
			.orElse(null);
	}

	private int awaitWritesUnder(String writes, long term, int atLeast) {
		return await().atMost(TAKEOVER.plusSeconds(5))
			.pollDelay(0, TimeUnit.MILLISECONDS)
			.pollInterval(Duration.ofMillis(50))
			.until(() -> (int) FencedWrites.read(this.cluster.dataSource(), writes)
				.writes()
				.stream()
				.filter((write) -> write.term() == term)
				.count(), (count) -> count >= atLeast);
	}

	private String url(NodeProcess node) {
		return this.baseUrls.get(node.nodeId());
	}

	private static NodeEvent grantOf(NodeProcess leader) {
		return grantOf(leader, BILLING);
	}

	private static NodeEvent grantOf(NodeProcess leader, String group) {
		return leader.lastEvent((event) -> event.is(Type.GRANTED, group)).orElseThrow();
	}

	/**
	 * A daemon's active assignment as a node reads it.
	 *
	 * @param daemon the daemon
	 * @param node the node that runs it
	 * @param generation the assignment's generation
	 */
	record Assignment(String daemon, String node, long generation) {
	}

}
