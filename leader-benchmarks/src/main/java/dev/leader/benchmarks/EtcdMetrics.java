package dev.leader.benchmarks;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The requests an etcd cluster served, as its members count them on their
 * {@code /metrics} endpoint (the client port, Prometheus' text format): per gRPC method,
 * the messages the members received from clients ({@code grpc_server_msg_received_total}:
 * each unary request, and each message on a stream, such as a lease keep-alive or a
 * watch's creation) and the calls started ({@code grpc_server_started_total}: a unary
 * request, or a stream opened), summed over the members. The harness's own scrapes are
 * HTTP, not gRPC, and count in neither; the members' traffic among themselves goes to
 * their peer ports.
 */
final class EtcdMetrics {

	private static final Pattern LINE = Pattern
		.compile("^(grpc_server_msg_received_total|grpc_server_started_total)\\{([^}]*)\\} ([0-9.eE+]+)$");

	private static final Pattern METHOD = Pattern.compile("grpc_method=\"([^\"]+)\"");

	private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

	private final List<String> endpoints;

	EtcdMetrics(List<String> endpoints) {
		this.endpoints = endpoints;
	}

	/**
	 * Reads the counters of every member.
	 * @return the counters, summed over the members
	 */
	Counters read() throws IOException, InterruptedException {
		Map<String, Double> received = new TreeMap<>();
		Map<String, Double> started = new TreeMap<>();
		for (String endpoint : this.endpoints) {
			HttpRequest request = HttpRequest.newBuilder(URI.create(endpoint + "/metrics"))
				.timeout(Duration.ofSeconds(5))
				.build();
			HttpResponse<String> response = this.http.send(request, HttpResponse.BodyHandlers.ofString());
			if (response.statusCode() != 200) {
				throw new IllegalStateException(endpoint + "/metrics answered " + response.statusCode());
			}
			boolean found = false;
			for (String line : response.body().split("\n")) {
				Matcher matcher = LINE.matcher(line.strip());
				if (!matcher.matches()) {
					continue;
				}
				found = true;
				double value = Double.parseDouble(matcher.group(3));
				Matcher method = METHOD.matcher(matcher.group(2));
				String name = method.find() ? method.group(1) : "?";
				(matcher.group(1).equals("grpc_server_started_total") ? started : received).merge(name, value,
						Double::sum);
			}
			if (!found) {
				throw new IllegalStateException(endpoint + "/metrics has no grpc_server_* counters");
			}
		}
		return new Counters(received, started);
	}

	/**
	 * The counters at one moment.
	 *
	 * @param received messages received, by gRPC method
	 * @param startedByMethod calls started (a unary request, or a stream opened), by gRPC
	 * method
	 */
	record Counters(Map<String, Double> received, Map<String, Double> startedByMethod) {

		double totalReceived() {
			return this.received.values().stream().mapToDouble(Double::doubleValue).sum();
		}

		double started() {
			return this.startedByMethod.values().stream().mapToDouble(Double::doubleValue).sum();
		}

	}

}
