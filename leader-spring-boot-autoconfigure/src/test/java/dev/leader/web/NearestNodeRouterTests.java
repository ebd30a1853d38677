package dev.leader.web;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import com.sun.net.httpserver.HttpServer;
import dev.leader.NodeInfo;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.http.ResponseEntity;
import org.springframework.web.client.RestClient;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatException;

/**
 * Tests for {@link NearestNodeRouter}, with nodes that are HTTP servers on loopback, each
 * behind a {@link DelayingProxy} that gives it the latency of a near or a far node. The
 * JVM's HTTP client is warmed up first: the first request of a cold client takes a few
 * hundred milliseconds, which would go into the average of whichever node it reached.
 */
class NearestNodeRouterTests {

	private final List<AutoCloseable> closed = new CopyOnWriteArrayList<>();

	private final List<NodeInfo> members = new CopyOnWriteArrayList<>();

	private final Map<String, AtomicInteger> hits = new ConcurrentHashMap<>();

	/**
	 * Sends a few requests through a client of the same kind first, so that the first
	 * latency a router measures is not the JVM's warm-up.
	 * @throws IOException if the server cannot start
	 */
	@BeforeEach
	void warmUp() throws IOException {
		node("warm-up", null, Duration.ZERO, 200, null);
		NodeInfo warmUp = this.members.remove(0);
		RestClient client = RestClient.create();
		for (int i = 0; i < 5; i++) {
			client.get().uri(warmUp.baseUrl() + "/rates/EUR").retrieve().toEntity(String.class);
		}
	}

	@AfterEach
	void closeNodes() throws Exception {
		for (AutoCloseable closeable : this.closed) {
			closeable.close();
		}
	}

	@Test
	void nodeOfTheSameZoneIsChosenEvenWhenANodeOfAnotherZoneIsFaster() throws Exception {
		node("near", "zone-a", Duration.ofMillis(40), 200, null);
		node("far", "zone-b", Duration.ZERO, 200, null);
		RestClient client = client(new NearestNodeRouter(this::members, "zone-a"));
		for (int i = 0; i < 10; i++) {
			assertThat(servedBy(client, Map.of())).isEqualTo("near");
		}
	}

	@Test
	void nodeWithTheLowestMovingAverageOfLatencyIsChosenWithinTheZone() throws Exception {
		// Far apart, so that a busy machine's first latency of the fast node, which the
		// router measures once and then only if it stays the fastest, cannot outweigh it.
		node("fast", "zone-a", Duration.ZERO, 200, null);
		node("slow", "zone-a", Duration.ofMillis(300), 200, null);
		node("other-zone", "zone-b", Duration.ZERO, 200, null);
		NearestNodeRouter router = new NearestNodeRouter(this::members, "zone-a");
		RestClient client = client(router);
		Map<String, Integer> served = new HashMap<>();
		for (int i = 0; i < 30; i++) {
			served.merge(servedBy(client, Map.of()), 1, Integer::sum);
		}
		// Each node of the zone is measured once, as it starts unmeasured; then the fast
		// one only, since the slow one's average is beyond the window.
		assertThat(served).doesNotContainKey("other-zone").containsEntry("slow", 1).containsEntry("fast", 29);
		assertThat(router.averageLatency("slow")).isGreaterThanOrEqualTo(Duration.ofMillis(300));
		assertThat(router.averageLatency("fast")).isLessThan(Duration.ofMillis(150));
	}

	@Test
	void answer503IsRetriedAtAnotherNodeAndEachLatencyGoesIntoTheAverageWithWeightOneFifth() throws Exception {
		node("unavailable", "zone-a", Duration.ZERO, 503, null);
		node("available", "zone-a", Duration.ofMillis(20), 200, null);
		NearestNodeRouter router = new NearestNodeRouter(this::members, "zone-a");
		RestClient client = client(router);
		for (int i = 0; i < 5; i++) {
			assertThat(servedBy(client, Map.of())).isEqualTo("available");
		}
		// A node that answered 503 goes last for a while.
		assertThat(this.hits.get("unavailable")).hasValue(1);
		assertThat(router.averageLatency("unavailable")).isNotNull();
	}

	@Test
	void nodeBeyondTheRequestedStalenessIsSkipped() throws Exception {
		node("stale", "zone-a", Duration.ZERO, 200, "5000");
		// Far slower than the stale node, whose one or two latencies measured may be a
		// busy machine's.
		node("fresh", "zone-a", Duration.ofMillis(200), 200, "20");
		NearestNodeRouter router = new NearestNodeRouter(this::members, "zone-a");
		RestClient client = client(router);
		List<String> bounded = new ArrayList<>();
		for (int i = 0; i < 10; i++) {
			bounded.add(servedBy(client, Map.of("Max-Staleness", "100")));
		}
		// At most the first requests reach the stale node, before its staleness is
		// known.
		assertThat(bounded.subList(2, 10)).containsOnly("fresh");
		// Without a bound, the faster node.
		assertThat(servedBy(client, Map.of()))
			.as("%s, averages %s and %s", bounded, router.averageLatency("stale"), router.averageLatency("fresh"))
			.isEqualTo("stale");
	}

	@Test
	void deadNodesAndNodesWithoutABaseUrlAreNeverChosenAndWithoutAnyTheRequestFails() throws Exception {
		node("alive", null, Duration.ZERO, 200, null);
		NodeInfo alive = this.members.get(0);
		this.members.add(new NodeInfo("dead", "dead", "localhost", 1, Instant.now(), Instant.now(), false,
				alive.baseUrl(), null));
		this.members.add(new NodeInfo("no-url", "no-url", "localhost", 1, Instant.now(), Instant.now(), true));
		RestClient client = client(new NearestNodeRouter(this::members, null));
		for (int i = 0; i < 5; i++) {
			assertThat(servedBy(client, Map.of())).isEqualTo("alive");
		}
		this.members.remove(alive);
		assertThatException().isThrownBy(() -> servedBy(client, Map.of()))
			.withStackTraceContaining("No live node advertises a base URL to send GET /rates/EUR to");
	}

	private List<NodeInfo> members() {
		return List.copyOf(this.members);
	}

	private void node(String id, @Nullable String zone, Duration latency, int status, @Nullable String staleness)
			throws IOException {
		HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
		this.hits.put(id, new AtomicInteger());
		server.createContext("/app/rates/", (exchange) -> {
			this.hits.get(id).incrementAndGet();
			byte[] body = id.getBytes(StandardCharsets.UTF_8);
			exchange.getResponseHeaders().add("Served-By", id);
			if (staleness != null) {
				exchange.getResponseHeaders().add("Staleness-Millis", staleness);
			}
			exchange.sendResponseHeaders(status, body.length);
			try (OutputStream out = exchange.getResponseBody()) {
				out.write(body);
			}
		});
		server.start();
		this.closed.add(() -> server.stop(0));
		DelayingProxy proxy = new DelayingProxy(server.getAddress(), latency);
		this.closed.add(proxy);
		this.members.add(new NodeInfo(id, id, "localhost", 1, Instant.now(), Instant.now(), true,
				"http://127.0.0.1:" + proxy.port() + "/app", zone));
	}

	private static RestClient client(NearestNodeRouter router) {
		return RestClient.builder().baseUrl("http://cluster").requestInterceptor(router).build();
	}

	private static String servedBy(RestClient client, Map<String, String> headers) {
		ResponseEntity<String> answer = client.get()
			.uri("/rates/EUR")
			.headers((request) -> headers.forEach(request::set))
			.retrieve()
			.toEntity(String.class);
		return answer.getBody();
	}

}
