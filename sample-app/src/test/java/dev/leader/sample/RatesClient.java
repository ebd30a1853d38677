package dev.leader.sample;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import dev.leader.test.Cluster;
import dev.leader.test.NodeProcess;
import org.jspecify.annotations.Nullable;

import static org.awaitility.Awaitility.await;

/**
 * A client of the sample's rates over HTTP, for tests of sample-app processes: finds each
 * node at the base URL it advertises in the membership, writes rates with {@code PUT
 * /rates/{code}} and reads them with the headers a test chooses.
 */
final class RatesClient {

	private static final Pattern RATE = Pattern.compile("\"rate\"\\s*:\\s*\"([^\"]+)\"");

	private final HttpClient http = HttpClient.newBuilder()
		.version(HttpClient.Version.HTTP_1_1)
		.connectTimeout(Duration.ofSeconds(5))
		.build();

	private final Duration timeout;

	/**
	 * Creates a client.
	 * @param timeout how long a request may take before it fails with an
	 * {@link java.net.http.HttpTimeoutException}
	 */
	RatesClient(Duration timeout) {
		this.timeout = timeout;
	}

	/**
	 * Waits until every node has advertised its base URL, which it derives from its local
	 * port once its web server runs.
	 * @param cluster the cluster
	 * @param nodes the nodes
	 * @param timeout how long to wait at most
	 * @return the base URL of each node, by node id
	 */
	static Map<String, String> awaitBaseUrls(Cluster cluster, List<NodeProcess> nodes, Duration timeout) {
		return await().atMost(timeout).until(() -> {
			Map<String, String> urls = new HashMap<>();
			try (var connection = cluster.dataSource().getConnection();
					var rows = connection.createStatement()
						.executeQuery("SELECT node_id, base_url FROM leader_nodes WHERE base_url IS NOT NULL")) {
				while (rows.next()) {
					urls.put(rows.getString(1), rows.getString(2));
				}
			}
			return urls;
		}, (urls) -> nodes.stream().allMatch((node) -> urls.containsKey(node.nodeId())));
	}

	Answer put(String node, String code, String rate) throws IOException, InterruptedException {
		return put(node, code, rate, Map.of());
	}

	Answer put(String node, String code, String rate, Map<String, String> headers)
			throws IOException, InterruptedException {
		HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(node + "/rates/" + code))
			.timeout(this.timeout)
			.header("Content-Type", "application/json")
			.PUT(HttpRequest.BodyPublishers.ofString("{\"rate\": \"" + rate + "\"}"));
		headers.forEach(request::header);
		return send(request.build());
	}

	Answer get(String node, String code, Map<String, String> headers) throws IOException, InterruptedException {
		return getPath(node, "/rates/" + code, headers);
	}

	/**
	 * Sends a GET of any path of a node, such as an actuator endpoint.
	 * @param node the node's base URL
	 * @param path the path, from {@code /}
	 * @param headers the request's headers
	 * @return the answer
	 */
	Answer getPath(String node, String path, Map<String, String> headers) throws IOException, InterruptedException {
		HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(node + path)).timeout(this.timeout).GET();
		headers.forEach(request::header);
		return send(request.build());
	}

	private Answer send(HttpRequest request) throws IOException, InterruptedException {
		HttpResponse<String> response = this.http.send(request, HttpResponse.BodyHandlers.ofString());
		Map<String, String> headers = new HashMap<>();
		response.headers().map().forEach((name, values) -> headers.put(name.toLowerCase(), values.get(0)));
		return new Answer(response.statusCode(), response.body(), headers);
	}

	/**
	 * An HTTP answer.
	 *
	 * @param status the status
	 * @param body the body
	 * @param headers the first value of each header, by lower-case name
	 */
	record Answer(int status, String body, Map<String, String> headers) {

		@Nullable String header(String name) {
			return this.headers.get(name.toLowerCase());
		}

		/**
		 * Returns the rate of a rate's JSON body.
		 * @return the rate, or {@code null} if the body holds none
		 */
		@Nullable String rate() {
			Matcher matcher = RATE.matcher(this.body);
			return matcher.find() ? matcher.group(1) : null;
		}

	}

}
