package dev.leader.sample;

import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import dev.leader.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatException;
import static org.awaitility.Awaitility.await;

/**
 * The demo with {@code --demo.coordinator=etcd}: the launcher starts an etcd cluster of
 * three members of its own, and its three nodes coordinate through it (their own tables
 * stay in the database, a fresh schema given as {@code demo.database.url}). The nodes
 * elect one leader of {@code billing} under a term that is an etcd revision, the launcher
 * and every node say they coordinate through etcd, as the cluster view does in headless
 * Chromium (its screenshot is {@code target/demo-on-etcd.png}), and closing the launcher
 * ends the members and removes their directory. An etcd binary that does not exist fails
 * startup saying how to provide one.
 */
class DemoOnEtcdTests {

	private final HttpClient http = HttpClient.newHttpClient();

	private final JsonMapper json = JsonMapper.builder().build();

	private final TestDatabase database = TestDatabase.createSchema();

	private ConfigurableApplicationContext launcher;

	@AfterEach
	void stopLauncher() {
		try {
			if (this.launcher != null) {
				this.launcher.close();
			}
		}
		finally {
			this.database.drop();
		}
	}

	@Test
	void launcherStartsItsEtcdClusterRunsTheNodesOnItAndRemovesItOnClose() throws Exception {
		List<Integer> ports = new ArrayList<>();
		for (int i = 0; i < 3; i++) {
			try (ServerSocket socket = new ServerSocket(0)) {
				ports.add(socket.getLocalPort());
			}
		}
		this.launcher = SampleApplication.application()
			.run("--server.port=0", "--demo.coordinator=etcd",
					"--demo.node-ports=" + ports.get(0) + "," + ports.get(1) + "," + ports.get(2),
					"--demo.database.url=" + this.database.url(), "--demo.database.username=" + this.database.user(),
					"--demo.database.password=" + this.database.password());
		int launcherPort = ((WebServerApplicationContext) this.launcher).getWebServer().getPort();
		List<ProcessHandle> members = ProcessHandle.current()
			.descendants()
			.filter((process) -> process.info().command().map((command) -> command.endsWith("/etcd")).orElse(false))
			.toList();
		assertThat(members).hasSize(3);

		JsonNode cluster = await("one leader of billing in the demo").atMost(Duration.ofSeconds(120))
			.pollInterval(Duration.ofMillis(500))
			.ignoreExceptions()
			.until(() -> get(launcherPort, "/demo/cluster"),
					(answer) -> answer.get("nodes")
						.valueStream()
						.filter((node) -> !node.get("leadership").isNull())
						.filter((node) -> node.get("leadership")
							.get("groups")
							.get("billing")
							.get("role")
							.asString()
							.equals("LEADER"))
						.count() == 1);
		assertThat(cluster.get("coordinator").asString()).isEqualTo("etcd");
		List<String> endpoints = cluster.get("endpoints").valueStream().map(JsonNode::asString).toList();
		assertThat(endpoints).hasSize(3).allMatch((endpoint) -> endpoint.startsWith("http://127.0.0.1:"));
		for (int port : ports) {
			JsonNode coordinator = await().atMost(Duration.ofSeconds(120))
				.ignoreExceptions()
				.until(() -> get(port, "/coordinator"), (answer) -> answer != null);
			assertThat(coordinator.get("coordinator").asString()).isEqualTo("etcd");
			assertThat(coordinator.get("endpoints").valueStream().map(JsonNode::asString).toList())
				.isEqualTo(endpoints);
		}
		// A term is the revision that last wrote the lease's key: etcd's revisions count
		// every write, the members' registrations first, so billing's first term is
		// above 1, unlike a database's first grant.
		long term = cluster.get("nodes")
			.valueStream()
			.filter((node) -> !node.get("leadership").isNull())
			.mapToLong((node) -> node.get("leadership").get("groups").get("billing").get("term").asLong())
			.max()
			.orElseThrow();
		assertThat(term).isGreaterThan(1);
		// The view says so, with billing's term as the nodes report it.
		try (HeadlessChromium browser = HeadlessChromium.start("The demo on etcd", 1200, 1150)) {
			browser.open("http://127.0.0.1:" + launcherPort + "/cluster.html");
			browser.waitUpTo(Duration.ofSeconds(30))
				.until((page) -> browser.text("#coordinator")
					.startsWith("Coordinated through etcd (" + endpoints.get(0))
						&& browser.text("#groups tr[data-group='billing'] .term").equals(Long.toString(term)));
			assertThat(browser.text("#coordinator")).contains("A term is the etcd revision");
			browser.screenshot("demo-on-etcd.png");
		}
		Path directory = Path
			.of(members.get(0)
				.info()
				.arguments()
				.map(List::of)
				.flatMap((arguments) -> Optional.of(arguments.get(arguments.indexOf("--data-dir") + 1)))
				.orElseThrow())
			.getParent();
		assertThat(directory).isDirectory();

		this.launcher.close();
		this.launcher = null;
		assertThat(members).allSatisfy((member) -> assertThat(member.isAlive())
			.withFailMessage("etcd member %d outlived the launcher", member.pid())
			.isFalse());
		assertThat(Files.exists(directory)).as("%s removed", directory).isFalse();
	}

	@Test
	void anEtcdBinaryThatDoesNotExistFailsStartupSayingHowToProvideOne() {
		assertThatException()
			.isThrownBy(() -> this.launcher = SampleApplication.application()
				.run("--server.port=0", "--demo.coordinator=etcd", "--demo.etcd.binary=/nonexistent/etcd",
						"--demo.database.url=" + this.database.url(),
						"--demo.database.username=" + this.database.user(),
						"--demo.database.password=" + this.database.password()))
			.havingRootCause()
			.withMessageContaining("demo.etcd.binary names /nonexistent/etcd")
			.withMessageContaining("etcd-server");
	}

	private JsonNode get(int port, String path) throws Exception {
		HttpResponse<String> response = this.http
			.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
				.timeout(Duration.ofSeconds(5))
				.header("Accept", "application/json")
				.build(), HttpResponse.BodyHandlers.ofString());
		assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
		return this.json.readTree(response.body());
	}

}
