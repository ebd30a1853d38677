package dev.leader.sample;

import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;

import dev.leader.LeaderInfo;
import org.assertj.core.api.InstanceOfAssertFactories;
import org.assertj.core.api.MapAssert;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.boot.resttestclient.autoconfigure.AutoConfigureRestTestClient;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.http.HttpStatus;
import org.springframework.test.json.AbstractJsonContentAssert;
import org.springframework.test.web.servlet.client.assertj.RestTestClientResponse;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.entry;
import static org.assertj.core.api.Assertions.within;
import static org.awaitility.Awaitility.await;
import static org.hamcrest.Matchers.equalTo;

/**
 * The sample application over HTTP on a random port, against a fresh PostgreSQL schema:
 * the {@code leadership} endpoint and health component as a leader and as a follower, and
 * the settlement batch running only on the leader of {@code billing}. A second node, when
 * a test needs one, is a bare engine in the test's JVM.
 */
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT,
		properties = { "leader.lease.duration=2s", "leader.lease.renew-interval=500ms",
				"leader.lease.retry-interval=500ms", "leader.lease.safety-margin=100ms", "leader.node.expiry=2s",
				"leader.lease.yield-cooldown=3s", "sample.settlement.interval=200ms" })
@AutoConfigureRestTestClient
class SampleApplicationTests extends FreshSchemaTests {

	private static final Duration LEASE = Duration.ofSeconds(2);

	private static final String APPLICATION_NAME = "sample";

	@BeforeEach
	void awaitLeadershipOfEveryGroup() {
		// A test that made this node a follower hands billing back when its other node
		// stops; the yield cooldown can delay the retake by a few seconds.
		await().atMost(Duration.ofSeconds(10))
			.until(() -> this.leadership.isLeader("default") && this.leadership.isLeader("billing"));
	}

	@Test
	void leadershipEndpointShowsThisNodeLeadingEveryGroupWithItselfAmongTheMembers() {
		String node = this.leadership.nodeId();
		Map<String, Long> terms = Map.of("default", term("default"), "billing", term("billing"));
		AbstractJsonContentAssert<?> json = assertThat(get("/actuator/leadership")).hasStatusOk().bodyJson();
		json.extractingPath("$.node").isEqualTo(node);
		json.extractingPath("$.groups").asMap().containsOnlyKeys("default", "billing");
		terms.forEach((group, term) -> {
			String path = "$.groups." + group;
			json.extractingPath(path + ".group").isEqualTo(group);
			json.extractingPath(path + ".role").isEqualTo("LEADER");
			json.extractingPath(path + ".term")
				.convertTo(InstanceOfAssertFactories.LONG)
				.isGreaterThanOrEqualTo(1L)
				.isEqualTo(term);
			json.extractingPath(path + ".leader").isEqualTo(node);
			json.extractingPath(path + ".expiresAt").satisfies(isRecentInstant());
			json.extractingPath(path + ".remainingMillis")
				.convertTo(InstanceOfAssertFactories.LONG)
				.isPositive()
				.isLessThanOrEqualTo(LEASE.toMillis());
		});
		assertMember(json, node).containsEntry("state", "ALIVE")
			.containsEntry("name", APPLICATION_NAME)
			.hasEntrySatisfying("host", (host) -> assertThat(host).asString().isNotBlank())
			.hasEntrySatisfying("pid", isNumber(ProcessHandle.current().pid()))
			.hasEntrySatisfying("startedAt", isRecentInstant())
			.hasEntrySatisfying("lastHeartbeat", isRecentInstant());
	}

	@Test
	void groupEndpointShowsTheOtherNodeAsLeaderOnceThisNodeHasYieldedBilling() {
		String node = this.leadership.nodeId();
		try (OtherNode other = OtherNode.start(database, this.settings, "billing")) {
			long otherTerm = handBillingTo(other);
			AbstractJsonContentAssert<?> group = assertThat(get("/actuator/leadership/billing")).hasStatusOk()
				.bodyJson();
			group.extractingPath("$.group").isEqualTo("billing");
			group.extractingPath("$.role").isEqualTo("FOLLOWER");
			group.extractingPath("$.leader").isEqualTo(OtherNode.ID);
			group.extractingPath("$.term").convertTo(InstanceOfAssertFactories.LONG).isEqualTo(otherTerm);
			group.extractingPath("$.expiresAt").satisfies(isRecentInstant());
			group.extractingPath("$.remainingMillis")
				.convertTo(InstanceOfAssertFactories.LONG)
				.isPositive()
				.isLessThanOrEqualTo(LEASE.toMillis());
			AbstractJsonContentAssert<?> all = assertThat(get("/actuator/leadership")).hasStatusOk().bodyJson();
			all.extractingPath("$.groups.default.role").isEqualTo("LEADER");
			all.extractingPath("$.groups.billing.role").isEqualTo("FOLLOWER");
			all.extractingPath("$.members[*].id").asArray().containsExactlyInAnyOrder(node, OtherNode.ID);
			assertMember(all, node).containsEntry("state", "ALIVE");
			assertMember(all, OtherNode.ID).containsEntry("state", "ALIVE")
				.containsEntry("name", OtherNode.NAME)
				.containsEntry("host", OtherNode.HOST)
				.hasEntrySatisfying("pid", isNumber(OtherNode.PID));
		}
	}

	@Test
	void groupEndpointAnswersNotFoundForAGroupThisNodeDoesNotTakePartIn() {
		assertThat(get("/actuator/leadership/unknown")).hasStatus(HttpStatus.NOT_FOUND);
	}

	@Test
	void healthShowsLeadershipUpWithThisNodeAndItsRolePerGroup() {
		AbstractJsonContentAssert<?> json = assertThat(get("/actuator/health")).hasStatusOk().bodyJson();
		json.extractingPath("$.components.leadership.status").isEqualTo("UP");
		json.extractingPath("$.components.leadership.details.node").isEqualTo(this.leadership.nodeId());
		json.extractingPath("$.components.leadership.details.roles")
			.asMap()
			.containsOnly(entry("default", "LEADER"), entry("billing", "LEADER"));
	}

	@Test
	void readinessGroupIncludesLeadership() {
		AbstractJsonContentAssert<?> json = assertThat(get("/actuator/health/readiness")).hasStatusOk().bodyJson();
		json.extractingPath("$.status").isEqualTo("UP");
		json.extractingPath("$.components.leadership.status").isEqualTo("UP");
		json.extractingPath("$.components.leadership.details.coordinator").isEqualTo("reachable");
		json.extractingPath("$.components.leadership.details.groups.billing.role").isEqualTo("LEADER");
	}

	@Test
	void yieldOperationIsNotAccessibleWithTheDefaultAccessEvenThoughTheEndpointIsExposed() {
		long term = term("billing");
		RestTestClientResponse response = RestTestClientResponse
			.from(this.http.post().uri("/actuator/leadership/billing").exchange());
		assertThat(response).hasStatus(HttpStatus.METHOD_NOT_ALLOWED);
		assertThat(this.leadership.isLeader("billing")).isTrue();
		assertThat(term("billing")).isEqualTo(term);
	}

	@Test
	void settlementBatchRunsOnlyOnTheBillingLeaderUnderItsTerm() {
		String node = this.leadership.nodeId();
		long term = term("billing");
		await().atMost(Duration.ofSeconds(5)).until(() -> batchesOfTerm(term), (count) -> count >= 3);
		long otherTerm;
		try (OtherNode other = OtherNode.start(database, this.settings, "billing")) {
			otherTerm = handBillingTo(other);
			// A run already under way when this node yielded may still finish; by the
			// time this node has read the other node's lease, such a run is long over.
			OffsetDateTime since = this.jdbc.sql("SELECT clock_timestamp()").query(OffsetDateTime.class).single();
			// The job still fires every 200 ms on this node, which is now a follower and
			// must skip every run.
			await().during(Duration.ofMillis(1500))
				.atMost(Duration.ofSeconds(3))
				.until(() -> batchesSince(since), equalTo(0L));
		}
		await().atMost(Duration.ofSeconds(10)).until(() -> this.leadership.isLeader("billing"));
		long retaken = term("billing");
		assertThat(retaken).isGreaterThan(otherTerm);
		assertThat(this.jdbc.sql("SELECT holder, term FROM leader_leases WHERE group_name = 'billing'")
			.query()
			.singleRow()).containsEntry("holder", node).containsEntry("term", retaken);
		await().atMost(Duration.ofSeconds(5)).until(() -> batchesOfTerm(retaken), (count) -> count >= 1);
		List<Map<String, Object>> batches = this.jdbc
			.sql("SELECT DISTINCT node_id, term FROM settlement_batches ORDER BY term")
			.query()
			.listOfRows();
		assertThat(batches).extracting((batch) -> batch.get("node_id")).containsOnly(node);
		assertThat(batches).extracting((batch) -> ((Number) batch.get("term")).longValue())
			.contains(term, retaken)
			.doesNotContain(otherTerm);
	}

	/**
	 * Makes this node yield billing to the other node, and waits until the other node
	 * leads it and this node has read so.
	 * @return the other node's term
	 */
	private long handBillingTo(OtherNode other) {
		// Once the other node has read this node's lease it waits for the release, so the
		// hand-over is deterministic.
		await().atMost(Duration.ofSeconds(5))
			.until(() -> other.engine().leader("billing").map(LeaderInfo::nodeId),
					equalTo(Optional.of(this.leadership.nodeId())));
		assertThat(this.leadership.yield("billing")).isTrue();
		assertThat(this.leadership.isLeader("billing")).isFalse();
		// At once through the release notification, at the latest when the lease it read
		// runs out, and in any case before this node's yield cooldown ends.
		await().atMost(this.settings.yieldCooldown().minusMillis(500)).until(() -> other.engine().isLeader("billing"));
		await().atMost(this.settings.renewInterval().multipliedBy(4))
			.until(() -> this.leadership.leader("billing").map(LeaderInfo::nodeId), equalTo(Optional.of(OtherNode.ID)));
		return other.engine().token("billing").orElseThrow().term();
	}

	private long term(String group) {
		return this.leadership.token(group).orElseThrow().term();
	}

	private long batchesOfTerm(long term) {
		return this.jdbc.sql("SELECT count(*) FROM settlement_batches WHERE node_id = ? AND term = ?")
			.params(this.leadership.nodeId(), term)
			.query(Long.class)
			.single();
	}

	private long batchesSince(OffsetDateTime time) {
		return this.jdbc.sql("SELECT count(*) FROM settlement_batches WHERE ran_at >= ?")
			.params(time)
			.query(Long.class)
			.single();
	}

	private static MapAssert<Object, Object> assertMember(AbstractJsonContentAssert<?> json, String id) {
		return json.extractingPath("$.members[?(@.id == '" + id + "')]")
			.asArray()
			.singleElement(InstanceOfAssertFactories.MAP);
	}

	private static Consumer<Object> isNumber(long expected) {
		return (value) -> assertThat(value).asInstanceOf(InstanceOfAssertFactories.type(Number.class))
			.extracting(Number::longValue)
			.isEqualTo(expected);
	}

	private static Consumer<Object> isRecentInstant() {
		// An ISO-8601 instant in database time; the database runs close to this JVM's
		// clock.
		return (value) -> assertThat(value).isInstanceOfSatisfying(String.class,
				(text) -> assertThat(Instant.parse(text)).isCloseTo(Instant.now(), within(1, ChronoUnit.MINUTES)));
	}

}
