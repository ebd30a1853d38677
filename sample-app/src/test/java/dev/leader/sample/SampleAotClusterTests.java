package dev.leader.sample;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;

import dev.leader.test.Cluster;
import dev.leader.test.Cluster.Lease;
import dev.leader.test.FencedWrites;
import dev.leader.test.FencedWrites.Write;
import dev.leader.test.NodeEvent;
import dev.leader.test.NodeEvent.Type;
import dev.leader.test.NodeProcess;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.util.ClassUtils;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Three nodes of the sample application processed ahead of time, each a JVM of its own
 * running on the initializer that the build generated ({@link AotSampleNode}, with
 * {@code spring.aot.enabled=true}), through leader-spring-boot-test's {@link Cluster}:
 * one leader is elected, a SIGTERM'd leader hands over before its lease could have run
 * out, and a leader paused past its lease has its fenced write rejected once it resumes.
 * The lease settings are given at runtime, on the command line, and take effect: AOT
 * freezes the conditions, not the properties (docs/aot.md).
 */
class SampleAotClusterTests {

	private static final String BILLING = "billing";

	private static final Duration LEASE = Duration.ofSeconds(2);

	private static final Duration RENEW_INTERVAL = Duration.ofMillis(500);

	private static final Duration STARTUP = Duration.ofSeconds(90);

	private static final Duration TAKEOVER = LEASE.plusSeconds(3);

	private static final String SETTLEMENTS = "SELECT 'settlement_batches', term, node_id FROM settlement_batches ORDER BY id";

	private static final String INVOICES = "SELECT 'invoices', term, node_id FROM invoices ORDER BY id";

	@RegisterExtension
	final Cluster cluster = Cluster.of(AotSampleNode.class)
		.withProperty("leader.lease.duration", LEASE.toMillis() + "ms")
		.withProperty("leader.lease.renew-interval", RENEW_INTERVAL.toMillis() + "ms")
		.withProperty("leader.lease.retry-interval", "500ms")
		.withProperty("leader.lease.safety-margin", "100ms")
		.withProperty("leader.node.expiry", "2s")
		.withProperty("sample.settlement.interval", "50ms")
		.withProperty("sample.invoices.step", "100ms");

	private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

	@BeforeAll
	static void theBuildProcessedTheSampleAheadOfTime() {
		assertThat(ClassUtils.isPresent(SampleApplication.class.getName() + "__ApplicationContextInitializer", null))
			.as("The sample's AOT initializer is missing: build sample-app with Maven, whose process-classes phase "
					+ "runs spring-boot-maven-plugin:process-aot")
			.isTrue();
	}

	@Test
	void aotProcessedNodesElectOneLeaderHandOverOnSigtermAndRejectThePausedLeadersFencedWrite() {
		this.cluster.startAll("node-a", "node-b", "node-c");
		NodeProcess first = this.cluster.awaitSingleLeader(BILLING, STARTUP);
		long firstTerm = grantOf(first).term();
		Lease lease = this.cluster.lease(BILLING).orElseThrow();
		// Given at runtime, and in effect: the default lease is five times longer.
		assertThat(Duration.between(lease.renewedAt(), lease.expiresAt())).isBetween(LEASE.minusMillis(100),
				LEASE.plusMillis(100));
		awaitSettlementUnder(firstTerm);

		long stoppedAt = System.nanoTime();
		first.sigterm();
		NodeEvent handOver = this.cluster.awaitGrant(BILLING, firstTerm, TAKEOVER);
		assertThat(handOver.node()).isNotEqualTo(first.nodeId());
		// The stopped leader's lease, renewed at most a renew interval before the signal,
		// could not have expired this soon: the lease was released.
		assertThat(Duration.ofNanos(handOver.nanoTime() - stoppedAt)).isLessThan(LEASE.minus(RENEW_INTERVAL));
		first.awaitEvent("its stop", (event) -> event.type() == Type.STOPPED, TAKEOVER);
		// Checked before the pause: a paused node prints the end of its tenure only once
		// it resumes, after its successor's start.
		this.cluster.assertTenuresDoNotOverlap(BILLING);

		NodeProcess second = node(handOver.node());
		long secondTerm = handOver.term();
		awaitSettlementUnder(secondTerm);
		awaitInvoiceOf(second, secondTerm);
		second.sigstop();
		NodeEvent takeover = this.cluster.awaitGrant(BILLING, secondTerm, TAKEOVER);
		assertThat(takeover.node()).isNotIn(first.nodeId(), second.nodeId());
		awaitSettlementUnder(takeover.term());
		second.sigcont();
		second.awaitEvent("the revoke of its term",
				(event) -> event.is(Type.REVOKED, BILLING) && event.term() == secondTerm, TAKEOVER);
		// The invoice run took its token before the pause and writes under it without
		// asking again: its first write after the pause meets the fence.
		// Its web server may answer a moment after its threads are thawed.
		JsonNode rejected = await().atMost(TAKEOVER)
			.ignoreExceptions()
			.until(() -> rejectedInvoiceWrite(second, secondTerm), (write) -> write != null);
		assertThat(rejected.get("group").asString()).isEqualTo(BILLING);
		assertThat(rejected.get("currentTerm").asLong()).isGreaterThanOrEqualTo(takeover.term());

		for (String writes : List.of(SETTLEMENTS, INVOICES)) {
			FencedWrites fenced = FencedWrites.read(this.cluster.dataSource(), writes).assertNoStaleWriteCommitted();
			assertThat(fenced.writesOf(second.nodeId())).extracting(Write::term).containsOnly(secondTerm);
		}
		assertThat(this.cluster.awaitSingleLeader(BILLING, TAKEOVER).nodeId()).isEqualTo(takeover.node());
	}

	@Test
	void leaderEnabledFalseGivenAtStartupRunsTheAotProcessedNodeAloneWithNoTable() {
		this.cluster.withProperty("leader.enabled", "false");
		NodeProcess alone = this.cluster.start("node-alone").awaitReady(STARTUP);
		alone.awaitEvent("its grant of billing", (event) -> event.is(Type.GRANTED, BILLING), TAKEOVER);
		// Read by a condition, it would have been fixed at build time, and the node would
		// have created the starter's tables and joined the election.
		assertThat(JdbcClient.create(this.cluster.dataSource())
			.sql("SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() "
					+ "AND table_name LIKE 'leader\\_%'")
			.query(Long.class)
			.single()).isZero();
		assertThat(this.cluster.lease(BILLING)).isEmpty();
	}

	private NodeProcess node(String nodeId) {
		return this.cluster.nodes()
			.stream()
			.filter((node) -> node.nodeId().equals(nodeId) && node.isAlive())
			.findFirst()
			.orElseThrow();
	}

	private static NodeEvent grantOf(NodeProcess leader) {
		return leader.lastEvent((event) -> event.is(Type.GRANTED, BILLING)).orElseThrow();
	}

	private void awaitSettlementUnder(long term) {
		await().atMost(TAKEOVER)
			.until(() -> FencedWrites.read(this.cluster.dataSource(), SETTLEMENTS)
				.writes()
				.stream()
				.anyMatch((write) -> write.term() == term));
	}

	private void awaitInvoiceOf(NodeProcess node, long term) {
		await().atMost(TAKEOVER)
			.until(() -> JdbcClient.create(this.cluster.dataSource())
				.sql("SELECT count(*) FROM invoices WHERE node_id = ? AND term = ?")
				.params(node.nodeId(), term)
				.query(Long.class)
				.single() > 0);
	}

	private @Nullable JsonNode rejectedInvoiceWrite(NodeProcess node, long heldTerm) throws Exception {
		String baseUrl = JdbcClient.create(this.cluster.dataSource())
			.sql("SELECT base_url FROM leader_nodes WHERE node_id = ?")
			.param(node.nodeId())
			.query(String.class)
			.optional()
			.orElse(null);
		if (baseUrl == null) {
			// Expired while paused: it registers again once it resumes.
			return null;
		}
		HttpResponse<String> response = this.http.send(
				HttpRequest.newBuilder(URI.create(baseUrl + "/rejected-writes")).timeout(Duration.ofSeconds(2)).build(),
				HttpResponse.BodyHandlers.ofString());
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

}
