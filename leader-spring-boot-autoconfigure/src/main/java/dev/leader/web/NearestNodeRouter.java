package dev.leader.web;

import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

import dev.leader.NodeInfo;
import org.jspecify.annotations.Nullable;

import org.springframework.http.HttpRequest;
import org.springframework.http.client.ClientHttpRequestExecution;
import org.springframework.http.client.ClientHttpRequestInterceptor;
import org.springframework.http.client.ClientHttpResponse;
import org.springframework.http.client.support.HttpRequestWrapper;

/**
 * A {@code RestClient} (or {@code RestTemplate}) interceptor that sends each request to a
 * node of the cluster, at the base URL it advertises in the membership: the request's
 * scheme, host and port are replaced by the node's, and the node's base path is put
 * before the request's path. So a client built with any base URL, such as
 * {@code http://cluster}, reaches the nodes: <pre>{@code
 * RestClient client = RestClient.builder()
 *     .baseUrl("http://cluster")
 *     .requestInterceptor(nearestNodeRouter)
 *     .build();
 * }</pre> The node is chosen among the live ones that advertise a base URL:
 * <ol>
 * <li>those of this node's zone first, if any advertise it; the others only for
 * retries;</li>
 * <li>nodes whose last answer reported a {@code Staleness-Millis} beyond the request's
 * {@code Max-Staleness} are left out, unless that would leave none;</li>
 * <li>by the moving average of their latency, as this router has measured it (each new
 * measurement weighs {@value #WEIGHT}, as MongoDB's drivers do): among the nodes within
 * the window of the lowest average, at random; a node not measured yet counts as the
 * fastest, so that each is measured; a node that failed a request or answered 503 in the
 * last 5 s goes last.</li>
 * </ol>
 * An answer 503, or a request that fails, is retried at the next node, up to the number
 * of attempts; the last answer or failure is returned. Thread-safe.
 */
public final class NearestNodeRouter implements ClientHttpRequestInterceptor {

	/**
	 * The weight of each new latency measurement in a node's moving average.
	 */
	public static final double WEIGHT = 0.2;

	private static final long FAILURE_PENALTY_NANOS = Duration.ofSeconds(5).toNanos();

	private final Supplier<List<NodeInfo>> members;

	private final @Nullable String zone;

	private final long windowNanos;

	private final int attempts;

	private final Map<String, Measured> measured = new ConcurrentHashMap<>();

	/**
	 * Creates a router with a window of 15 ms and 3 attempts.
	 * @param members the members, as this node last read them, such as
	 * {@code LeaderEngine::members}
	 * @param zone the zone of this node, or {@code null}
	 */
	public NearestNodeRouter(Supplier<List<NodeInfo>> members, @Nullable String zone) {
		this(members, zone, Duration.ofMillis(15), 3);
	}

	/**
	 * Creates a router.
	 * @param members the members, as this node last read them
	 * @param zone the zone of this node, or {@code null}
	 * @param window how much slower than the fastest node's average a node's may be to be
	 * chosen at random with it
	 * @param attempts how many nodes a request tries at most, 1 or more
	 */
	public NearestNodeRouter(Supplier<List<NodeInfo>> members, @Nullable String zone, Duration window, int attempts) {
		if (window.isNegative() || attempts < 1) {
			throw new IllegalArgumentException(
					"The window must not be negative and the attempts at least 1, were " + window + " and " + attempts);
		}
		this.members = members;
		this.zone = zone;
		this.windowNanos = window.toNanos();
		this.attempts = attempts;
	}

	@Override
	public ClientHttpResponse intercept(HttpRequest request, byte[] body, ClientHttpRequestExecution execution)
			throws IOException {
		List<NodeInfo> order = order(maxStaleness(request.getHeaders().getFirst(ReadHeaders.MAX_STALENESS)));
		if (order.isEmpty()) {
			throw new IOException("No live node advertises a base URL to send " + request.getMethod() + " "
					+ request.getURI().getRawPath() + " to");
		}
		int tries = Math.min(this.attempts, order.size());
		IOException failure = null;
		for (int i = 0; i < tries; i++) {
			NodeInfo node = order.get(i);
			URI target = target(node.baseUrl(), request.getURI());
			long started = System.nanoTime();
			ClientHttpResponse response;
			try {
				response = execution.execute(new HttpRequestWrapper(request) {

					@Override
					public URI getURI() {
						return target;
					}

				}, body);
			}
			catch (IOException ex) {
				this.measured.computeIfAbsent(node.id(), (id) -> new Measured()).failed(System.nanoTime());
				failure = ex;
				continue;
			}
			Measured measured = this.measured.computeIfAbsent(node.id(), (id) -> new Measured());
			long answeredAt = System.nanoTime();
			measured.answered(answeredAt - started, response.getHeaders().getFirst(ReadHeaders.STALENESS));
			if (response.getStatusCode().value() != 503) {
				return response;
			}
			measured.failed(answeredAt);
			if (i == tries - 1) {
				return response;
			}
			response.close();
		}
		throw (failure != null) ? failure : new IOException("No node answered");
	}

	/**
	 * Returns the nodes in the order a request tries them.
	 * @param maxStaleness the request's staleness bound, or {@code null}
	 * @return the nodes
	 */
	List<NodeInfo> order(@Nullable Duration maxStaleness) {
		long now = System.nanoTime();
		List<NodeInfo> live = this.members.get()
			.stream()
			.filter((node) -> node.alive() && node.baseUrl() != null)
			.toList();
		if (maxStaleness != null) {
			List<NodeInfo> fresh = live.stream().filter((node) -> !beyond(node, maxStaleness)).toList();
			live = fresh.isEmpty() ? live : fresh;
		}
		List<NodeInfo> near = new ArrayList<>();
		List<NodeInfo> far = new ArrayList<>();
		for (NodeInfo node : live) {
			((this.zone != null && this.zone.equals(node.zone())) ? near : far).add(node);
		}
		if (near.isEmpty()) {
			near = far;
			far = List.of();
		}
		List<NodeInfo> order = new ArrayList<>(byLatency(near, now));
		order.addAll(byLatency(far, now));
		return order;
	}

	private List<NodeInfo> byLatency(List<NodeInfo> nodes, long now) {
		List<NodeInfo> sorted = new ArrayList<>(nodes);
		sorted.sort(Comparator.comparingDouble((NodeInfo node) -> rank(node, now)));
		if (sorted.size() > 1) {
			double fastest = rank(sorted.get(0), now);
			int within = 1;
			while (within < sorted.size() && rank(sorted.get(within), now) <= fastest + this.windowNanos) {
				within++;
			}
			Collections.shuffle(sorted.subList(0, within));
		}
		return sorted;
	}

	private double rank(NodeInfo node, long now) {
		Measured measured = this.measured.get(node.id());
		return (measured != null) ? measured.rank(now) : 0;
	}

	private boolean beyond(NodeInfo node, Duration maxStaleness) {
		Measured measured = this.measured.get(node.id());
		return measured != null && measured.stalenessMillis() > maxStaleness.toMillis();
	}

	/**
	 * Returns the node's moving average of latency, as measured so far.
	 * @param nodeId the node id
	 * @return the average, or {@code null} if the node has not answered yet
	 */
	@Nullable Duration averageLatency(String nodeId) {
		Measured measured = this.measured.get(nodeId);
		return (measured != null && measured.average() >= 0) ? Duration.ofNanos((long) measured.average()) : null;
	}

	private static @Nullable Duration maxStaleness(@Nullable String header) {
		if (header == null) {
			return null;
		}
		try {
			return Duration.ofMillis(Long.parseLong(header.trim()));
		}
		catch (NumberFormatException ex) {
			// The node answers 400 with the reason.
			return null;
		}
	}

	private static URI target(@Nullable String baseUrl, URI requested) {
		URI base = URI.create(baseUrl);
		String path = ((base.getRawPath() != null) ? base.getRawPath() : "")
				+ ((requested.getRawPath() != null) ? requested.getRawPath() : "");
		return URI.create(base.getScheme() + "://" + base.getRawAuthority() + path
				+ ((requested.getRawQuery() != null) ? "?" + requested.getRawQuery() : ""));
	}

	/**
	 * What this router has measured of one node.
	 */
	private static final class Measured {

		private double average = -1;

		private long failedAt;

		private boolean failed;

		private long stalenessMillis = -1;

		synchronized void answered(long latencyNanos, @Nullable String staleness) {
			this.average = (this.average < 0) ? latencyNanos : WEIGHT * latencyNanos + (1 - WEIGHT) * this.average;
			this.failed = false;
			if (staleness != null) {
				try {
					this.stalenessMillis = Long.parseLong(staleness.trim());
				}
				catch (NumberFormatException ex) {
					this.stalenessMillis = -1;
				}
			}
		}

		synchronized void failed(long now) {
			this.failed = true;
			this.failedAt = now;
		}

		synchronized double rank(long now) {
			double rank = Math.max(0, this.average);
			return (this.failed && now - this.failedAt < FAILURE_PENALTY_NANOS) ? rank + 1e15 : rank;
		}

		synchronized double average() {
			return this.average;
		}

		synchronized long stalenessMillis() {
			return this.stalenessMillis;
		}

	}

}
