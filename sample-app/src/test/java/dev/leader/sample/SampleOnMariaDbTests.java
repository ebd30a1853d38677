package dev.leader.sample;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.test.FencedWrites;
import dev.leader.test.FencedWrites.Write;
import dev.leader.test.MariaDbTestDatabase;
import dev.leader.test.NodeEvent;
import dev.leader.test.NodeEvent.Type;
import dev.leader.test.NodeProcess;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.springframework.jdbc.core.simple.JdbcClient;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Three nodes of the sample application on MariaDB, each a JVM of its own started with
 * only {@code --spring.datasource.url=jdbc:mariadb://…} and
 * {@code --spring.datasource.username=root}: the starter's tables and the sample's own
 * come from their MariaDB migrations. One leader per group, the daemons spread over the
 * nodes, a SIGTERM'd leader hands over, a killed one is replaced within the lease and
 * half a second and its daemon moves, and a paused leader's settlements are rejected once
 * it resumes. The database is a fresh one on {@link MariaDbTestDatabase}'s server,
 * dropped after each test.
 */
class SampleOnMariaDbTests {

	private static final Duration LEASE = Duration.ofSeconds(2);

	private static final Duration STARTUP = Duration.ofSeconds(120);

	private static final Duration TAKEOVER = LEASE.plusSeconds(3);

	private static final List<String> GROUPS = List.of("default", "billing");

	private static final String BILLING = "billing";

	private static final String SETTLEMENTS = "SELECT 'settlement_batches', term, node_id FROM settlement_batches ORDER BY id";

	private final List<NodeProcess> nodes = new ArrayList<>();

	@TempDir
	Path output;

	private final MariaDbTestDatabase database = MariaDbTestDatabase.create();

	private final HikariDataSource dataSource = this.database.dataSource(2);

	@AfterEach
	void stopNodesAndDropDatabase() {
		try {
			this.nodes.forEach(NodeProcess::close);
		}
		finally {
			this.dataSource.close();
			this.database.drop();
		}
	}

	@Test
	void nodesLeadEachGroupOnceSpreadTheDaemonsAndALeaderHandsOverOnSigterm() {
		startNodes("node-a", "node-b", "node-c");
		for (String group : GROUPS) {
			awaitSingleLeader(group);
		}
		awaitDaemonsOnDistinctLiveNodes();
		NodeProcess leader = awaitSingleLeader(BILLING);
		long term = grantOf(leader, BILLING).term();
		leader.sigterm();
		NodeEvent successor = awaitGrant(BILLING, term, TAKEOVER);
		assertThat(successor.node()).isNotEqualTo(leader.nodeId());
		leader.awaitEvent("its stop", (event) -> event.type() == Type.STOPPED, TAKEOVER);
	}

	@Test
	void killedLeaderIsReplacedWithinTheLeaseAndHalfASecondAndItsDaemonsMove() {
		startNodes("node-a", "node-b", "node-c");
		NodeProcess leader = awaitSingleLeader(BILLING);
		long term = grantOf(leader, BILLING).term();
		awaitDaemonsOnDistinctLiveNodes();
		long killedAt = System.nanoTime();
		leader.kill9();
		NodeEvent takeover = awaitGrant(BILLING, term, TAKEOVER);
		assertThat(takeover.node()).isNotEqualTo(leader.nodeId());
		assertThat(Duration.ofNanos(takeover.nanoTime() - killedAt)).isLessThanOrEqualTo(LEASE.plusMillis(500));
		awaitDaemonsOnDistinctLiveNodes();
		assertThat(activeAssignments().values()).doesNotContain(leader.nodeId());
	}

	@Test
	void pausedLeaderLosesBillingAndNoneOfItsSettlementsCommitsAfterItResumes() {
		startNodes("node-a", "node-b", "node-c");
		NodeProcess leader = awaitSingleLeader(BILLING);
		long term = grantOf(leader, BILLING).term();
		awaitSettlementsUnder(term, 1);
		leader.sigstop();
		NodeEvent takeover = awaitGrant(BILLING, term, TAKEOVER);
		assertThat(takeover.node()).isNotEqualTo(leader.nodeId());
		int settledBeforeThaw = awaitSettlementsUnder(takeover.term(), 1);
		leader.sigcont();
		leader.awaitEvent("the revoke of its term", (event) -> event.is(Type.REVOKED, BILLING) && event.term() == term,
				TAKEOVER);
		// The thawed node had time to act on its old term while the new leader went on.
		awaitSettlementsUnder(takeover.term(), settledBeforeThaw + 10);
		FencedWrites settlements = FencedWrites.read(this.dataSource, SETTLEMENTS).assertNoStaleWriteCommitted();
		assertThat(settlements.writesOf(leader.nodeId())).extracting(Write::term).containsOnly(term);
		assertThat(settlements.highestTerm("settlement_batches")).isEqualTo(takeover.term());
	}

	private void startNodes(String... nodeIds) {
		for (String nodeId : nodeIds) {
			List<String> arguments = List.of("--spring.datasource.url=" + this.database.url(),
					"--spring.datasource.username=" + this.database.user(),
					"--spring.datasource.password=" + this.database.password(), "--leader.node.id=" + nodeId,
					"--server.port=0", "--leader.lease.duration=" + LEASE.toMillis() + "ms",
					"--leader.lease.renew-interval=500ms", "--leader.lease.retry-interval=500ms",
					"--leader.lease.safety-margin=100ms", "--leader.node.expiry=2s",
					"--sample.settlement.interval=50ms");
			try {
				this.nodes.add(NodeProcess.startApplication(SampleApplication.class, nodeId, arguments, Map.of(),
						this.output.resolve(nodeId + ".log")));
			}
			catch (IOException ex) {
				throw new IllegalStateException("Could not start " + nodeId, ex);
			}
		}
		this.nodes.forEach((node) -> node.awaitReady(STARTUP));
	}

	private NodeProcess awaitSingleLeader(String group) {
		return await().atMost(STARTUP).until(() -> liveLeaders(group), (leaders) -> leaders.size() == 1).get(0);
	}

	private List<NodeProcess> liveLeaders(String group) {
		return this.nodes.stream().filter(NodeProcess::isAlive).filter((node) -> node.isLeader(group)).toList();
	}

	private NodeEvent awaitGrant(String group, long termAbove, Duration timeout) {
		return await().atMost(timeout)
			.pollInterval(Duration.ofMillis(20))
			.until(() -> this.nodes.stream()
				.flatMap((node) -> node.firstEvent((event) -> event.is(Type.GRANTED, group) && event.term() > termAbove)
					.stream())
				.findFirst(), Optional::isPresent)
			.orElseThrow();
	}

	private static NodeEvent grantOf(NodeProcess leader, String group) {
		return leader.lastEvent((event) -> event.is(Type.GRANTED, group)).orElseThrow();
	}

	// Both daemons active, each on another live node: least loaded first spreads two
	// daemons over three nodes.
	private void awaitDaemonsOnDistinctLiveNodes() {
		List<String> live = this.nodes.stream().filter(NodeProcess::isAlive).map(NodeProcess::nodeId).toList();
		await().atMost(Duration.ofSeconds(60))
			.pollInterval(Duration.ofMillis(100))
			.untilAsserted(() -> assertThat(activeAssignments()).hasSize(2)
				.satisfies((assignments) -> assertThat(assignments.values()).doesNotHaveDuplicates()
					.allSatisfy((node) -> assertThat(node).isIn(live))));
	}

	private Map<String, String> activeAssignments() {
		return JdbcClient.create(this.dataSource)
			.sql("SELECT daemon_name, node_id FROM leader_assignments WHERE state = 'ACTIVE'")
			.query((rows) -> {
				Map<String, String> assignments = new TreeMap<>();
				while (rows.next()) {
					assignments.put(rows.getString(1), rows.getString(2));
				}
				return assignments;
			});
	}

	private int awaitSettlementsUnder(long term, int atLeast) {
		return await().atMost(TAKEOVER.plusSeconds(5))
			.pollDelay(0, TimeUnit.MILLISECONDS)
			.until(() -> settlementsUnder(term), (count) -> count >= atLeast);
	}

	private int settlementsUnder(long term) {
		return (int) FencedWrites.read(this.dataSource, SETTLEMENTS)
			.writes()
			.stream()
			.filter((write) -> write.term() == term)
			.count();
	}

}
