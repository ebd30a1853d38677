package dev.leader.sample.demo;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

import com.fasterxml.jackson.annotation.JsonRawValue;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.jdbc.DatabaseDriver;
import org.springframework.boot.jdbc.autoconfigure.JdbcConnectionDetails;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.server.ResponseStatusException;

/**
 * The launcher's HTTP API, which the cluster view uses:
 * <ul>
 * <li>{@code GET /demo/cluster}: what the nodes coordinate through, every node's process
 * state, and what its {@code /actuator/leadership} and {@code /rejected-writes} answer
 * now ({@code null} when it does not answer in time, as when paused);</li>
 * <li>{@code POST /demo/nodes/{number}/{action}}, with {@code kill} (SIGKILL),
 * {@code pause} (SIGSTOP), {@code resume} (SIGCONT), {@code stop} (SIGTERM) or
 * {@code restart}: acts on that node's process and answers its state; 404 for an unknown
 * node or action, 409 when the process is not in a state for it, 403 when a page of
 * another origin asks, or the request names the launcher other than by a loopback
 * name.</li>
 * </ul>
 */
@RestController
@RequestMapping("/demo")
class DemoController {

	private static final Set<String> LOOPBACK_NAMES = Set.of("127.0.0.1", "localhost", "[::1]");

	private static final Duration PROBE_TIMEOUT = Duration.ofMillis(1500);

	private final NodeProcesses nodes;

	private final String coordinator;

	private final List<String> etcdEndpoints;

	private final HttpClient http = HttpClient.newBuilder()
		.version(HttpClient.Version.HTTP_1_1)
		.connectTimeout(PROBE_TIMEOUT)
		.build();

	DemoController(NodeProcesses nodes, JdbcConnectionDetails database, ObjectProvider<DemoEtcd> etcd) {
		this.nodes = nodes;
		DemoEtcd cluster = etcd.getIfAvailable();
		this.coordinator = (cluster != null) ? "etcd" : DatabaseDriver.fromJdbcUrl(database.getJdbcUrl()).getId();
		this.etcdEndpoints = (cluster != null) ? cluster.endpoints() : List.of();
	}

	@GetMapping("/cluster")
	Cluster cluster() {
		List<CompletableFuture<NodeStatus>> probes = this.nodes.nodes().stream().map(this::probe).toList();
		return new Cluster(this.coordinator, this.etcdEndpoints, probes.stream().map(CompletableFuture::join).toList());
	}

	@PostMapping("/nodes/{number}/{action}")
	NodeStatus act(@PathVariable int number, @PathVariable String action, @RequestHeader("Host") String host,
			@RequestHeader(name = "Origin", required = false) @Nullable String origin) {
		requireLocal(host, origin);
		DemoNode node = this.nodes.node(number)
			.orElseThrow(() -> new ResponseStatusException(HttpStatus.NOT_FOUND, "No node " + number));
		switch (action) {
			case "kill" -> node.kill();
			case "pause" -> node.pause();
			case "resume" -> node.resume();
			case "stop" -> node.stop();
			case "restart" -> node.restart(this.nodes.stopTimeout());
			default -> throw new ResponseStatusException(HttpStatus.NOT_FOUND, "No action '" + action + "'");
		}
		return status(node, null, null);
	}

	/**
	 * Refuses a request that a page of another site makes a browser send (a cross-site
	 * POST needs no preflight), or that reaches the launcher through a name other than
	 * the loopback's (DNS rebinding).
	 * @param host the request's {@code Host} header
	 * @param origin the request's {@code Origin} header, if any
	 */
	private static void requireLocal(String host, @Nullable String origin) {
		String name = host.substring(0,
				(host.lastIndexOf(':') > host.lastIndexOf(']')) ? host.lastIndexOf(':') : host.length());
		if (!LOOPBACK_NAMES.contains(name) || (origin != null && !origin.equals("http://" + host))) {
			throw new ResponseStatusException(HttpStatus.FORBIDDEN,
					"The demo's fault controls answer only to pages of the launcher itself, on the loopback");
		}
	}

	@ExceptionHandler(IllegalStateException.class)
	ProblemDetail conflict(IllegalStateException ex) {
		return ProblemDetail.forStatusAndDetail(HttpStatus.CONFLICT, ex.getMessage());
	}

	private CompletableFuture<NodeStatus> probe(DemoNode node) {
		if (node.state() != DemoNode.State.RUNNING) {
			// A paused node would only time out, and a stopped one answers nothing.
			return CompletableFuture.completedFuture(status(node, null, null));
		}
		CompletableFuture<@Nullable String> leadership = get(node, "/actuator/leadership");
		CompletableFuture<@Nullable String> rejectedWrites = get(node, "/rejected-writes");
		return leadership.thenCombine(rejectedWrites, (view, rejected) -> status(node, view, rejected));
	}

	private CompletableFuture<@Nullable String> get(DemoNode node, String path) {
		HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.port() + path))
			.timeout(PROBE_TIMEOUT)
			.header("Accept", "application/json")
			.build();
		return this.http.sendAsync(request, HttpResponse.BodyHandlers.ofString())
			.<@Nullable String>thenApply((response) -> (response.statusCode() == 200) ? response.body() : null)
			.exceptionally((ex) -> null);
	}

	private static NodeStatus status(DemoNode node, @Nullable String leadership, @Nullable String rejectedWrites) {
		return new NodeStatus(node.number(), node.name(), node.port(), node.pid(), node.state(), leadership,
				rejectedWrites);
	}

	/**
	 * The answer of {@code GET /demo/cluster}.
	 *
	 * @param coordinator what the nodes coordinate through: {@code etcd}, or the
	 * database's kind, such as {@code postgresql}
	 * @param endpoints the client URLs of the launcher's etcd members, empty on a
	 * database
	 * @param nodes the nodes, by number
	 */
	record Cluster(String coordinator, List<String> endpoints, List<NodeStatus> nodes) {
	}

	/**
	 * One node as the launcher sees it.
	 *
	 * @param number its number, from 1
	 * @param name its node name
	 * @param port its HTTP port on 127.0.0.1
	 * @param pid the pid of its latest process, if one was started
	 * @param state the state of that process
	 * @param leadership what its {@code /actuator/leadership} answered, as JSON, or
	 * {@code null}
	 * @param rejectedWrites what its {@code /rejected-writes} answered, as JSON, or
	 * {@code null}
	 */
	record NodeStatus(int number, String name, int port, @Nullable Long pid, DemoNode.State state,
			@JsonRawValue @Nullable String leadership, @JsonRawValue @Nullable String rejectedWrites) {
	}

}
