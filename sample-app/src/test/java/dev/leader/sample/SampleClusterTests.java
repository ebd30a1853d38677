package dev.leader.sample;

import java.time.Duration;
import java.util.List;

import dev.leader.test.Cluster;
import dev.leader.test.FencedWrites;
import dev.leader.test.FencedWrites.Write;
import dev.leader.test.NodeEvent;
import dev.leader.test.NodeEvent.Type;
import dev.leader.test.NodeProcess;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Three nodes of the sample application, each a JVM of its own, started through
 * leader-spring-boot-test's {@link Cluster} as a user of the kit tests an application:
 * the leader of {@code billing} is paused or killed, and another node takes over with a
 * higher term. The settlement batch's fenced writes are checked with
 * {@link FencedWrites}: no settlement of a lower term committed after one of a higher
 * term.
 */
class SampleClusterTests {

	private static final String BILLING = "billing";

	private static final Duration LEASE = Duration.ofSeconds(2);

	private static final Duration STARTUP = Duration.ofSeconds(90);

	private static final Duration TAKEOVER = LEASE.plusSeconds(3);

	private static final String SETTLEMENTS = "SELECT 'settlement_batches', term, node_id FROM settlement_batches ORDER BY id";

	@RegisterExtension
	final Cluster cluster = Cluster.of(SampleApplication.class)
		.withProperty("leader.lease.duration", "2s")
		.withProperty("leader.lease.renew-interval", "500ms")
		.withProperty("leader.lease.retry-interval", "500ms")
		.withProperty("leader.lease.safety-margin", "100ms")
		.withProperty("leader.node.expiry", "2s")
		.withProperty("sample.settlement.interval", "50ms");

	@Test
	void pausedLeaderLosesBillingToANodeWithAHigherTermAndNoneOfItsSettlementsCommitsAfterwards() {
		this.cluster.startAll("node-a", "node-b", "node-c");
		NodeProcess leader = this.cluster.awaitSingleLeader(BILLING, STARTUP);
		long term = grantOf(leader).term();
		awaitSettlementUnder(term);
		leader.sigstop();
		NodeEvent takeover = this.cluster.awaitGrant(BILLING, term, TAKEOVER);
		assertThat(takeover.node()).isNotEqualTo(leader.nodeId());
		int settledBeforeThaw = awaitSettlementUnder(takeover.term());
		leader.sigcont();
		leader.awaitEvent("the revoke of its term", (event) -> event.is(Type.REVOKED, BILLING) && event.term() == term,
				TAKEOVER);
		// The thawed node had time to act on its old term while the new leader went on
		// settling.
		await().atMost(TAKEOVER).until(() -> settlementsUnder(takeover.term()) > settledBeforeThaw + 10);
		FencedWrites settlements = FencedWrites.read(this.cluster.dataSource(), SETTLEMENTS)
			.assertNoStaleWriteCommitted();
		assertThat(settlements.writesOf(leader.nodeId())).extracting(Write::term).containsOnly(term);
		assertThat(settlements.highestTerm("settlement_batches")).isEqualTo(takeover.term());
		assertThat(this.cluster.awaitSingleLeader(BILLING, TAKEOVER).nodeId()).isEqualTo(takeover.node());
	}

	@Test
	void killedLeaderIsReplacedWithinTheLeaseAndTheNewLeaderSettlesUnderAHigherTerm() {
		List<NodeProcess> nodes = this.cluster.startAll("node-a", "node-b");
		NodeProcess leader = this.cluster.awaitSingleLeader(BILLING, STARTUP);
		long term = grantOf(leader).term();
		awaitSettlementUnder(term);
		leader.kill9();
		NodeEvent takeover = this.cluster.awaitGrant(BILLING, term, TAKEOVER);
		assertThat(takeover.node()).isIn(nodes.stream().map(NodeProcess::nodeId).toList())
			.isNotEqualTo(leader.nodeId());
		awaitSettlementUnder(takeover.term());
		FencedWrites.read(this.cluster.dataSource(), SETTLEMENTS).assertNoStaleWriteCommitted();
		this.cluster.assertTenuresDoNotOverlap(BILLING);
	}

	private static NodeEvent grantOf(NodeProcess leader) {
		return leader.lastEvent((event) -> event.is(Type.GRANTED, BILLING)).orElseThrow();
	}

	private int awaitSettlementUnder(long term) {
		return await().atMost(TAKEOVER).until(() -> settlementsUnder(term), (count) -> count > 0);
	}

	private int settlementsUnder(long term) {
		return (int) FencedWrites.read(this.cluster.dataSource(), SETTLEMENTS)
			.writes()
			.stream()
			.filter((write) -> write.term() == term)
			.count();
	}

}
