package dev.leader.sample;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import dev.leader.log.Bookmark;
import dev.leader.sample.RatesClient.Answer;
import dev.leader.test.Cluster;
import dev.leader.test.NodeEvent.Type;
import dev.leader.test.NodeProcess;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The sample's replicated rates over HTTP, on several sample-app processes on loopback
 * sharing a real PostgreSQL schema: writes go to the leader of {@code billing} (forwarded
 * from any other node), reads are served at followers with the consistency their headers
 * ask for. Each node is found at the base URL it advertises in the membership, which it
 * derives from its local port.
 */
class SampleRatesTests {

	private static final String BILLING = "billing";

	private static final Duration STARTUP = Duration.ofSeconds(90);

	private static final Duration REQUEST = Duration.ofSeconds(20);

	@RegisterExtension
	final Cluster cluster = Cluster.of(SampleApplication.class)
		.withProperty("leader.lease.duration", "6s")
		.withProperty("leader.lease.renew-interval", "1s")
		.withProperty("leader.lease.retry-interval", "1s")
		.withProperty("leader.node.expiry", "6s")
		.withProperty("leader.follower-reads.wait", "1s")
		.withProperty("sample.jobs.enabled", "false");

	private final RatesClient rates = new RatesClient(REQUEST);

	@Test
	void thousandWritesEachReadAtAFollowerWithItsBookmarkNeverReturnAnOlderValue() throws Exception {
		List<NodeProcess> nodes = this.cluster.startAll("node-a", "node-b", "node-c");
		NodeProcess leader = this.cluster.awaitSingleLeader(BILLING, STARTUP);
		Map<String, String> urls = awaitBaseUrls(nodes);
		List<String> followers = nodes.stream()
			.filter((node) -> node != leader)
			.map((node) -> urls.get(node.nodeId()))
			.toList();
		List<String> writers = nodes.stream().map((node) -> urls.get(node.nodeId())).toList();
		List<String> codes = List.of("EUR", "USD", "CHF");
		int forwarded = 0;
		for (int i = 1; i <= 1000; i++) {
			String code = codes.get(i % codes.size());
			String rate = "1." + String.format("%04d", i);
			String writer = writers.get(i % writers.size());
			Answer put = this.rates.put(writer, code, rate);
			assertThat(put.status()).as("PUT %d at %s: %s", i, writer, put.body()).isEqualTo(200);
			assertThat(put.header("Served-By")).isEqualTo(leader.nodeId());
			if (!writer.equals(urls.get(leader.nodeId()))) {
				forwarded++;
			}
			Bookmark written = Bookmark.parse(put.header("Leader-Bookmark"));
			String follower = followers.get(i % followers.size());
			Answer get = this.rates.get(follower, code, Map.of("Leader-Bookmark", written.toString()));
			assertThat(get.status()).as("GET %d at %s after %s: %s", i, follower, written, get.body()).isEqualTo(200);
			assertThat(get.rate()).as("GET %d at %s after %s", i, follower, written).isEqualTo(rate);
			assertThat(Bookmark.parse(get.header("Leader-Bookmark")).index()).isGreaterThanOrEqualTo(written.index());
		}
		assertThat(forwarded).isGreaterThan(600);
	}

	@Test
	void pausedFollowerIsNeverUsedForABoundedReadBeyondItsBound() throws Exception {
		NodeProcess leader = startLeader();
		NodeProcess follower = startRejectingFollower();
		Map<String, String> urls = awaitBaseUrls(List.of(leader, follower));
		String atLeader = urls.get(leader.nodeId());
		String atFollower = urls.get(follower.nodeId());
		Answer first = this.rates.put(atLeader, "EUR", "1.0000");
		Bookmark before = Bookmark.parse(first.header("Leader-Bookmark"));
		assertThat(this.rates.get(atFollower, "EUR", Map.of("Leader-Bookmark", before.toString())).rate())
			.isEqualTo("1.0000");
		long bound = 300;
		int servedLocally = 0;
		for (int round = 1; round <= 3; round++) {
			String rate = round + ".5000";
			follower.sigstop();
			long committed;
			try {
				assertThat(this.rates.put(atLeader, "EUR", rate).status()).isEqualTo(200);
				committed = System.nanoTime();
				// The pause itself: the follower misses the decision for longer than the
				// bound.
				Thread.sleep(3 * bound);
			}
			finally {
				follower.sigcont();
			}
			long sent = System.nanoTime();
			Answer stale = this.rates.get(atFollower, "EUR",
					Map.of("Read-Consistency", "bookmark", "Leader-Bookmark", before.toString()));
			assertThat(stale.status()).isEqualTo(200);
			if (!rate.equals(stale.rate())) {
				// Served from before the decision: its staleness must say so.
				assertThat(stale.header("Staleness-Millis")).isNotNull();
				assertThat(Long.parseLong(stale.header("Staleness-Millis")))
					.isGreaterThanOrEqualTo(Duration.ofNanos(sent - committed).toMillis());
			}
			long asked = System.nanoTime();
			Answer bounded = this.rates.get(atFollower, "EUR",
					Map.of("Read-Consistency", "bounded", "Max-Staleness", String.valueOf(bound)));
			long took = Duration.ofNanos(System.nanoTime() - asked).toMillis() + 1;
			assertThat(bounded.status()).as(bounded.body()).isIn(200, 503);
			if (bounded.status() == 200) {
				servedLocally++;
				assertThat(bounded.rate()).as("bounded read %d", round).isEqualTo(rate);
				assertThat(bounded.header("Served-By")).isEqualTo(follower.nodeId());
				// Within the bound when the node checked it; the header is the bound when
				// the body was written, after the handler ran, so it may have grown since
				// by at most the time the request took.
				assertThat(Long.parseLong(bounded.header("Staleness-Millis"))).isLessThanOrEqualTo(bound + took);
			}
			else {
				assertThat(bounded.header("Retry-After")).isNotNull();
			}
			before = Bookmark.parse(bounded.header("Leader-Bookmark"));
		}
		assertThat(servedLocally).as("bounded reads served at the follower once it caught up").isPositive();
	}

	@Test
	void writeAtAFollowerIsForwardedToTheLeaderAndAnsweredWithTheLeadersBookmark() throws Exception {
		List<NodeProcess> nodes = this.cluster.startAll("node-a", "node-b");
		NodeProcess leader = this.cluster.awaitSingleLeader(BILLING, STARTUP);
		NodeProcess follower = nodes.stream().filter((node) -> node != leader).findFirst().orElseThrow();
		long term = leader.lastEvent((event) -> event.is(Type.GRANTED, BILLING)).orElseThrow().term();
		Map<String, String> urls = awaitBaseUrls(nodes);
		String atFollower = urls.get(follower.nodeId());
		Answer put = this.rates.put(atFollower, "GBP", "0.8571");
		assertThat(put.status()).as(put.body()).isEqualTo(200);
		assertThat(put.header("Served-By")).isEqualTo(leader.nodeId());
		Bookmark bookmark = Bookmark.parse(put.header("Leader-Bookmark"));
		assertThat(bookmark.group()).isEqualTo(BILLING);
		assertThat(bookmark.term()).isEqualTo(term);
		assertThat(put.rate()).isEqualTo("0.8571");
		Answer read = this.rates.get(atFollower, "GBP", Map.of("Leader-Bookmark", bookmark.toString()));
		assertThat(read.rate()).isEqualTo("0.8571");
		assertThat(read.header("Served-By")).isEqualTo(follower.nodeId());
		Answer atLeader = this.rates.get(atFollower, "GBP", Map.of("Read-Consistency", "leader"));
		assertThat(atLeader.status()).isEqualTo(200);
		assertThat(atLeader.header("Served-By")).isEqualTo(leader.nodeId());
		assertThat(atLeader.rate()).isEqualTo("0.8571");
		Answer index = this.rates.get(atFollower, "GBP", Map.of());
		assertThat(index.header("Served-By")).isEqualTo(follower.nodeId());
		assertThat(Bookmark.parse(index.header("Leader-Bookmark")).index()).isGreaterThanOrEqualTo(bookmark.index());
		assertThat(index.header("Staleness-Millis")).isNotNull();
		assertThat(this.rates.get(atFollower, "JPY", Map.of("Leader-Bookmark", bookmark.toString())).status())
			.isEqualTo(404);
	}

	@Test
	void malformedHeadersAreAnswered400AndAnUnservableReadIsAnswered503UnderTheRejectPolicy() throws Exception {
		NodeProcess leader = startLeader();
		NodeProcess rejecting = startRejectingFollower();
		NodeProcess forwarding = this.cluster.start("node-c").awaitReady(STARTUP);
		Map<String, String> urls = awaitBaseUrls(List.of(leader, rejecting, forwarding));
		String atRejecting = urls.get(rejecting.nodeId());
		String atForwarding = urls.get(forwarding.nodeId());
		Bookmark written = Bookmark
			.parse(this.rates.put(urls.get(leader.nodeId()), "EUR", "1.1000").header("Leader-Bookmark"));
		Map<Map<String, String>, String> malformed = Map.of(Map.of("Leader-Bookmark", "not-a-bookmark"),
				"Leader-Bookmark must be", Map.of("Leader-Bookmark", "default@1.1"), "is of group 'default'",
				Map.of("Max-Staleness", "-5"), "Max-Staleness must be", Map.of("Max-Staleness", "soon"),
				"Max-Staleness must be", Map.of("Read-Consistency", "eventual"), "Read-Consistency must be",
				Map.of("Read-Consistency", "bounded"), "bounded needs a Max-Staleness",
				Map.of("Read-Consistency", "bookmark"), "bookmark needs a Leader-Bookmark");
		for (Map.Entry<Map<String, String>, String> request : malformed.entrySet()) {
			for (String node : List.of(atRejecting, atForwarding)) {
				Answer answer = this.rates.get(node, "EUR", request.getKey());
				assertThat(answer.status()).as("%s", request.getKey()).isEqualTo(400);
				assertThat(answer.body()).contains(request.getValue());
				assertThat(answer.header("Leader-Bookmark")).startsWith(BILLING + "@");
			}
		}
		assertThat(this.rates.get(atRejecting, "eur!", Map.of()).status()).isEqualTo(400);
		assertThat(this.rates.put(atRejecting, "EUR", "1,5").status()).isEqualTo(400);
		assertThat(this.rates.put(atRejecting, "EUR", "-1").status()).isEqualTo(400);
		Bookmark lost = new Bookmark(BILLING, written.term() + 5, written.index());
		Answer conflict = this.rates.get(atForwarding, "EUR", Map.of("Leader-Bookmark", lost.toString()));
		assertThat(conflict.status()).as(conflict.body()).isEqualTo(409);
		assertThat(conflict.body()).contains("is not in the history of group billing");
		Bookmark ahead = new Bookmark(BILLING, written.term(), written.index() + 1_000_000);
		Answer rejected = this.rates.get(atRejecting, "EUR", Map.of("Leader-Bookmark", ahead.toString()));
		assertThat(rejected.status()).as(rejected.body()).isEqualTo(503);
		assertThat(rejected.header("Retry-After")).isEqualTo("1");
		assertThat(rejected.header("Leader-Bookmark")).isNotNull();
		// The forwarding node forwards it to the leader, which cannot serve it either and
		// does not forward it again.
		Answer forwarded = this.rates.get(atForwarding, "EUR", Map.of("Leader-Bookmark", ahead.toString()));
		assertThat(forwarded.status()).as(forwarded.body()).isEqualTo(503);
		assertThat(forwarded.body()).contains("node " + leader.nodeId()).contains("is not forwarded again");
		Answer marked = this.rates.get(atForwarding, "EUR",
				Map.of("Read-Consistency", "leader", "Leader-Forwarded-By", "x"));
		assertThat(marked.status()).isEqualTo(503);
		assertThat(marked.body()).contains("is not forwarded again");
		assertThat(this.rates.put(atForwarding, "EUR", "1.2000", Map.of("Leader-Forwarded-By", "x")).status())
			.isEqualTo(503);
	}

	/**
	 * Starts {@code node-a} alone, and waits until it leads {@code billing}.
	 */
	private NodeProcess startLeader() {
		NodeProcess leader = this.cluster.start("node-a").awaitReady(STARTUP);
		this.cluster.awaitSingleLeader(BILLING, STARTUP);
		return leader;
	}

	/**
	 * Starts {@code node-b}, which answers a read it cannot serve with 503 instead of
	 * forwarding it to the leader.
	 */
	private NodeProcess startRejectingFollower() {
		return this.cluster.start("node-b", Map.of("leader.follower-reads.unservable", "reject"), Map.of())
			.awaitReady(STARTUP);
	}

	private Map<String, String> awaitBaseUrls(List<NodeProcess> nodes) {
		return RatesClient.awaitBaseUrls(this.cluster, nodes, STARTUP);
	}

}
