package dev.leader.sample;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

import dev.leader.FencingToken;
import dev.leader.LeaderInfo;
import dev.leader.daemon.DaemonSettings;
import dev.leader.log.Bookmark;
import dev.leader.log.DecisionLog;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.support.ui.WebDriverWait;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.resttestclient.autoconfigure.AutoConfigureRestTestClient;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.MediaType;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.hamcrest.Matchers.equalTo;

/**
 * The cluster view page ({@code /cluster.html}) in a real headless Chromium, driven by
 * Debian's {@code chromedriver}: the sample application and a second node share a fresh
 * PostgreSQL schema, the page shows both nodes, the leader of each group and the
 * assignment of each daemon, and it follows a yield and a daemon move made through the
 * actuator's write operations, which this test enables. The second node can run the
 * sample's daemons, and the settle window is too long for the leader to rebalance them by
 * itself, so they move only when asked to.
 * <p>
 * Never skipped: without Debian's {@code chromium} and {@code chromium-driver} packages
 * it fails, saying how to install them. The screenshot it takes is
 * {@code target/cluster-view.png}, copied to {@code docs/} by hand.
 */
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT,
		properties = { "leader.lease.duration=2s", "leader.lease.renew-interval=500ms",
				"leader.lease.retry-interval=500ms", "leader.lease.safety-margin=100ms", "leader.node.expiry=2s",
				"leader.lease.yield-cooldown=30s", "leader.daemons.settle-window=1h",
				"management.endpoint.leadership.access=unrestricted" })
@AutoConfigureRestTestClient
class ClusterViewBrowserTests extends FreshSchemaTests {

	private static final List<String> DAEMONS = List.of("outbox-dispatcher", "report-builder");

	@LocalServerPort
	private int port;

	@Autowired
	private DaemonSettings daemonSettings;

	@Autowired
	private DecisionLog decisionLog;

	@AutoClose
	private OtherNode other;

	@AutoClose
	private HeadlessChromium browser;

	@BeforeEach
	void startBrowserAndSecondNode() {
		await().atMost(Duration.ofSeconds(10)).until(() -> this.leadership.isLeader("billing"));
		this.other = OtherNode.startWithDaemons(database, this.settings, this.daemonSettings, DAEMONS, "default",
				"billing");
		this.browser = HeadlessChromium.start("The cluster view test", 1100, 920);
	}

	@Test
	void pageShowsLeadersAndDaemonsAndFollowsAYieldAndADaemonMove() throws IOException, InterruptedException {
		String node = this.leadership.nodeId();
		long term = this.leadership.token("billing").orElseThrow().term();
		this.browser.open("http://localhost:" + this.port + "/cluster.html");
		WebDriverWait wait = this.browser.waitUpTo(Duration.ofSeconds(10));
		wait.until((page) -> this.browser.text("#node").equals(node));
		wait.until((page) -> groupCell("billing", "leader").equals(node)
				&& groupCell("billing", "term").equals(Long.toString(term)));
		wait.until((page) -> nodeIds().containsAll(List.of(node, OtherNode.ID)));
		assertThat(groupCell("default", "leader")).isEqualTo(node);
		// This node's applied index of the billing log, its lag and staleness bound.
		FencingToken token = this.leadership.token("billing").orElseThrow();
		this.decisionLog.append(token, "note", "first");
		Bookmark second = this.decisionLog.append(token, "note", "second");
		assertThat(this.decisionLog.awaitApplied(second, Duration.ofSeconds(10))).isTrue();
		wait.until((page) -> groupCell("billing", "log").startsWith("2 (lag 0, ≤ "));
		assertThat(groupCell("default", "log")).as("a group without applier").isEqualTo("–");
		assertThat(this.browser.text("#nodes tr[data-node='" + OtherNode.ID + "'] .badge")).isEqualTo("ALIVE");

		// The other node waits for this node's release once it has read its lease, so the
		// hand-over is immediate.
		await().atMost(Duration.ofSeconds(5))
			.until(() -> this.other.engine().leader("billing").map(LeaderInfo::nodeId), equalTo(Optional.of(node)));
		this.http.post()
			.uri("/actuator/leadership/billing")
			.exchange()
			.expectStatus()
			.isOk()
			.expectBody()
			.jsonPath("$.yielded")
			.isEqualTo(true);
		await().atMost(Duration.ofSeconds(5)).until(() -> this.other.engine().isLeader("billing"));
		long otherTerm = this.other.engine().token("billing").orElseThrow().term();
		assertThat(otherTerm).isGreaterThan(term);
		wait.until((page) -> groupCell("billing", "leader").equals(OtherNode.ID)
				&& groupCell("billing", "term").equals(Long.toString(otherTerm)));
		assertThat(this.browser.text("#groups tr[data-group='billing'] .badge")).isEqualTo("FOLLOWER");
		wait.until((page) -> this.browser.text("#timeline")
			.contains("billing: leader " + OtherNode.ID + " (term " + otherTerm + "), was " + node + " (term " + term
					+ ")"));

		await().atMost(Duration.ofSeconds(10)).until(() -> activeAssignments().keySet().containsAll(DAEMONS));
		Map<String, Placement> placed = activeAssignments();
		wait.until((page) -> DAEMONS.stream().allMatch((daemon) -> placed.get(daemon).equals(daemonRow(daemon))));
		for (String daemon : DAEMONS) {
			assertThat(List.of(node, OtherNode.ID)).contains(placed.get(daemon).node());
			assertThat(this.browser.text("#nodes tr[data-node='" + placed.get(daemon).node() + "']")).contains(daemon);
		}

		Placement before = placed.get("outbox-dispatcher");
		String target = before.node().equals(node) ? OtherNode.ID : node;
		this.http.post()
			.uri("/actuator/leadership/daemons/outbox-dispatcher")
			.contentType(MediaType.APPLICATION_JSON)
			.body(Map.of("node", target))
			.exchange()
			.expectStatus()
			.isOk()
			.expectBody()
			.jsonPath("$.kind")
			.isEqualTo("MOVE");
		await().atMost(Duration.ofSeconds(10))
			.until(() -> activeAssignments().get("outbox-dispatcher"),
					(after) -> after != null && after.node().equals(target));
		Placement after = activeAssignments().get("outbox-dispatcher");
		assertThat(after.generation()).isGreaterThan(before.generation());
		wait.until((page) -> after.equals(daemonRow("outbox-dispatcher")));
		assertThat(this.browser.text("#timeline")).contains("outbox-dispatcher: " + before.node() + " \u2192 " + target
				+ " (generation " + after.generation() + ")");
		assertThat(daemonRow("report-builder")).isEqualTo(placed.get("report-builder"));
		this.browser.screenshot("cluster-view.png");
	}

	/**
	 * Reads the assignments from the database rather than the endpoint that the page
	 * itself shows.
	 */
	private Map<String, Placement> activeAssignments() {
		return this.jdbc.sql("SELECT daemon_name, node_id, generation FROM leader_assignments WHERE state = 'ACTIVE'")
			.query((rows) -> {
				Map<String, Placement> placements = new TreeMap<>();
				while (rows.next()) {
					placements.put(rows.getString("daemon_name"),
							new Placement(rows.getString("node_id"), "ACTIVE", rows.getLong("generation")));
				}
				return placements;
			});
	}

	private Placement daemonRow(String daemon) {
		List<String> cells = this.browser.texts("#daemons tr[data-daemon='" + daemon + "'] td");
		return (cells.size() < 4) ? new Placement("", "", 0)
				: new Placement(cells.get(1), cells.get(2), Long.parseLong(cells.get(3)));
	}

	private String groupCell(String group, String cell) {
		return this.browser.text("#groups tr[data-group='" + group + "'] ." + cell);
	}

	private List<String> nodeIds() {
		return this.browser.read("#nodes tr[data-node]", "element.dataset.node");
	}

	private record Placement(String node, String state, long generation) {
	}

}
