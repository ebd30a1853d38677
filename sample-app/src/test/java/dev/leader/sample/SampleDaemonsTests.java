package dev.leader.sample;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import org.springframework.boot.resttestclient.autoconfigure.AutoConfigureRestTestClient;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.test.json.AbstractJsonContentAssert;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The sample application's daemons on a single node, against a fresh PostgreSQL schema:
 * both run here, show in {@code /actuator/leadership}, and write under their assignment's
 * generation.
 */
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT,
		properties = { "leader.lease.renew-interval=200ms", "sample.outbox.interval=100ms",
				"sample.reports.interval=200ms", "sample.settlement.interval=1h" })
@AutoConfigureRestTestClient
class SampleDaemonsTests extends FreshSchemaTests {

	private static final Duration WAIT = Duration.ofSeconds(15);

	@Test
	void outboxDispatcherAndReportBuilderRunHereUnderTheirGenerationAndShowInTheLeadershipEndpoint() {
		String node = this.leadership.nodeId();
		this.jdbc.sql("INSERT INTO outbox (payload) VALUES ('one'), ('two'), ('three')").update();
		await().atMost(WAIT)
			.until(() -> this.jdbc.sql("SELECT count(*) FROM outbox WHERE dispatched_at IS NULL")
				.query(Long.class)
				.single() == 0);
		long outboxGeneration = generation("outbox-dispatcher");
		assertThat(this.jdbc.sql("SELECT DISTINCT dispatched_by, generation FROM outbox").query().singleRow())
			.containsEntry("dispatched_by", node)
			.containsEntry("generation", outboxGeneration);
		await().atMost(WAIT)
			.until(() -> this.jdbc.sql("SELECT count(*) FROM reports WHERE dispatched = 3")
				.query(Long.class)
				.single() > 0);
		assertThat(this.jdbc.sql("SELECT DISTINCT node_id, generation FROM reports").query().singleRow())
			.containsEntry("node_id", node)
			.containsEntry("generation", generation("report-builder"));
		AbstractJsonContentAssert<?> json = assertThat(get("/actuator/leadership")).hasStatusOk().bodyJson();
		json.extractingPath("$.assignments[*].daemon").asArray().containsExactly("outbox-dispatcher", "report-builder");
		json.extractingPath("$.assignments[*].node").asArray().containsOnly(node);
		json.extractingPath("$.assignments[*].state").asArray().containsOnly("ACTIVE");
		json.extractingPath("$.assignments[0].generation").isEqualTo((int) outboxGeneration);
	}

	private long generation(String daemon) {
		return this.jdbc.sql("SELECT generation FROM leader_assignments WHERE daemon_name = ? AND state = 'ACTIVE'")
			.param(daemon)
			.query(Long.class)
			.single();
	}

}
