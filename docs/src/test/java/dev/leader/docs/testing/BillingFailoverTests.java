package dev.leader.docs.testing;

import java.time.Duration;

import dev.leader.test.Cluster;
import dev.leader.test.NodeEvent;
import dev.leader.test.NodeEvent.Type;
import dev.leader.test.NodeProcess;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;

// tag::cluster[]
class BillingFailoverTests {

	@RegisterExtension
	final Cluster cluster = Cluster.of(InvoicingApplication.class)
		.withProperty("leader.lease.duration", "2s")
		.withProperty("leader.lease.renew-interval", "500ms")
		.withProperty("leader.lease.retry-interval", "500ms");

	@Test
	void killedLeaderIsReplacedUnderAHigherTerm() {
		this.cluster.startAll("node-a", "node-b", "node-c");
		NodeProcess leader = this.cluster.awaitSingleLeader("billing", Duration.ofSeconds(90));
		long term = leader.lastEvent((event) -> event.is(Type.GRANTED, "billing")).orElseThrow().term();
		leader.kill9();
		NodeEvent takeover = this.cluster.awaitGrant("billing", term, Duration.ofSeconds(5));
		assertThat(takeover.node()).isNotEqualTo(leader.nodeId());
		this.cluster.assertTenuresDoNotOverlap("billing");
	}

}
// end::cluster[]
