package dev.leader.lease;

import java.time.Duration;
import java.util.List;

import dev.leader.FencingToken;
import dev.leader.LeadershipGrantedEvent;
import dev.leader.node.NodeRegistration;
import dev.leader.test.InProcessNodes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.jdbc.core.simple.JdbcClient;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Two processes started with the same node id, against real PostgreSQL: the registration
 * belongs to the process that made it, and the other one stays out of every election,
 * with an error that says why, until that process has gone. The two never share a term.
 * The processes are engines with different pids, as separate JVMs would be.
 */
@ExtendWith(OutputCaptureExtension.class)
class NodeIdentityTests {

	@RegisterExtension
	final InProcessNodes nodes = new InProcessNodes();

	@Test
	void secondProcessWithALiveNodeIdStaysOutWithAClearErrorAndNeverSharesATerm(CapturedOutput output) {
		LeaderEngine first = start(101);
		await().atMost(Duration.ofSeconds(5)).until(() -> first.isLeader("default"));
		FencingToken held = first.token("default").orElseThrow();
		LeaderEngine second = start(202);
		// Longer than the lease and the node expiry: the second process renews nothing of
		// the first's.
		await().pollDelay(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(4)).until(() -> true);
		assertThat(second.isLeader("default")).isFalse();
		assertThat(first.token("default")).contains(held);
		assertThat(this.nodes.events()).filteredOn(LeadershipGrantedEvent.class::isInstance).hasSize(1);
		assertThat(output)
			.containsOnlyOnce("Node id 'twin' is registered by another live process (host localhost, " + "pid 101");
		assertThat(JdbcClient.create(this.nodes.dataSource())
			.sql("SELECT pid FROM leader_nodes WHERE node_id = 'twin'")
			.query(Long.class)
			.single()).isEqualTo(101);
		first.stop();
		await().atMost(Duration.ofSeconds(5)).until(() -> second.isLeader("default"));
		assertThat(second.token("default").orElseThrow().term()).isGreaterThan(held.term());
		assertThat(output).contains("Leader node twin registered: the other process with its id has gone silent");
	}

	private LeaderEngine start(long pid) {
		return this.nodes.start(InProcessNodes.FAST, new NodeRegistration("twin", "app", "localhost", pid),
				List.of("default"));
	}

}
