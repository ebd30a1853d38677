package dev.leader.daemon;

import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import dev.leader.lease.LeaseSettings;
import dev.leader.test.Cluster;
import dev.leader.test.NodeProcess;
import dev.leader.test.TestNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.simple.JdbcClient;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Crash takeover of a group other than the daemons group ({@code aux}): the nodes are not
 * bound to their sessions, so the end of the session that bound a lease makes its holder
 * step down from that lease and nothing else; its daemons run on.
 */
class LeaseSessionDaemonTests {

	@RegisterExtension
	final Cluster cluster = TestNode.cluster(LeaseSettings.defaults(), "aux").withProperty("crash-takeover", "aux");

	@Test
	void endOfASessionThatBoundOnlyALeaseLeavesTheHoldersDaemonsRunning() throws Exception {
		JdbcClient jdbc = JdbcClient.create(this.cluster.dataSource());
		DaemonCluster daemons = new DaemonCluster(this.cluster,
				Map.of("ack-timeout", "PT10S", "drain-timeout", "PT5S", "settle", "PT1S"));
		daemons.start("node-a", "d1,d2,d3,d4");
		daemons.start("node-b", "d1,d2,d3,d4");
		daemons.awaitReady("node-a", "node-b");
		daemons.awaitActiveLoads(List.of(2, 2));
		await().atMost(Duration.ofSeconds(10))
			.until(() -> jdbc
				.sql("SELECT count(*) FROM leader_leases WHERE group_name = 'aux' AND session_pid IS NOT NULL")
				.query(Long.class)
				.single() == 1);
		long term = jdbc.sql("SELECT term FROM leader_leases WHERE group_name = 'aux'").query(Long.class).single();
		String holder = jdbc.sql("SELECT holder FROM leader_leases WHERE group_name = 'aux'")
			.query(String.class)
			.single();
		Map<String, Long> running = daemons.assignments()
			.values()
			.stream()
			.filter((assignment) -> assignment.node().equals(holder))
			.collect(Collectors.toMap(Assignment::daemon, Assignment::generation));
		jdbc.sql("SELECT pg_terminate_backend(session_pid) FROM leader_leases WHERE group_name = 'aux'")
			.query()
			.listOfRows();
		await("aux granted again after its holder's session ended").atMost(Duration.ofSeconds(5))
			.until(() -> jdbc.sql("SELECT term FROM leader_leases WHERE group_name = 'aux' AND holder IS NOT NULL")
				.query(Long.class)
				.optional()
				.orElse(term) > term);
		NodeProcess node = daemons.node(holder);
		// The lease's revoke is logged; a daemon's stop would be an event.
		assertThat(Files.readString(node.stderr())).contains("action=revoked").contains("reason=SESSION_LOST");
		await("the holder's daemons, under the same generations").during(Duration.ofSeconds(3))
			.atMost(Duration.ofSeconds(5))
			.until(() -> daemons.assignments()
				.values()
				.stream()
				.filter((assignment) -> assignment.node().equals(holder))
				.collect(Collectors.toMap(Assignment::daemon, Assignment::generation))
				.equals(running));
		assertThat(Files.readString(node.stderr())).doesNotContain("reason=SESSION_LOST, failure");
		daemons.assertExclusive();
	}

}
