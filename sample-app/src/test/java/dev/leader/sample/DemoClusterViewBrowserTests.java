package dev.leader.sample;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import dev.leader.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.support.ui.WebDriverWait;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The demo in a real headless Chromium: {@link SampleApplication#main}'s application
 * without {@code spring.datasource.url}, so the demo's launcher, in this JVM, with its
 * three nodes as processes of their own. The test presses pause on the leader of
 * {@code billing}, sees the takeover with its new term in the timeline, presses resume,
 * and sees the resumed node's writes under its old term rejected; then it stops the new
 * leader gracefully and sees it hand over, and kills the next one (kill -9) and sees the
 * crash takeover of {@code billing} before that leader's lease would have run out. What
 * the page shows is checked against the nodes' own endpoints, and every node process must
 * be gone once the launcher is closed.
 * <p>
 * The database is a fresh schema of {@code LEADER_TEST_JDBC_URL} when set, given to the
 * launcher as {@code demo.database.url}; else the launcher's embedded one, in a temporary
 * directory. Never skipped: without Debian's {@code chromium} and {@code chromium-driver}
 * it fails, saying how to install them. Its screenshot,
 * {@code target/demo-after-pause.png}, is the README's {@code docs/demo-after-pause.png}.
 */
class DemoClusterViewBrowserTests {

	private static final Pattern TAKEOVER = Pattern
		.compile("billing: leader (node-\\d) \\(term (\\d+)\\), was (node-\\d) \\(term (\\d+)\\) \u2014 takeover");

	private final HttpClient http = HttpClient.newHttpClient();

	private final JsonMapper json = JsonMapper.builder().build();

	private TestDatabase database;

	private ConfigurableApplicationContext launcher;

	private final List<Integer> nodePorts = new ArrayList<>();

	private HeadlessChromium browser;

	private final List<ProcessHandle> startedNodes = new ArrayList<>();

	@TempDir
	private Path embeddedData;

	@BeforeEach
	void startDemoAndBrowser() throws IOException {
		for (int i = 0; i < 3; i++) {
			try (ServerSocket socket = new ServerSocket(0)) {
				this.nodePorts.add(socket.getLocalPort());
			}
		}
		List<String> args = new ArrayList<>(List.of("--server.port=0", "--demo.node-ports=" + this.nodePorts.get(0)
				+ "," + this.nodePorts.get(1) + "," + this.nodePorts.get(2)));
		String external = System.getenv("LEADER_TEST_JDBC_URL");
		if (external != null && !external.isBlank()) {
			this.database = TestDatabase.createSchema();
			args.addAll(List.of("--demo.database.url=" + this.database.url(),
					"--demo.database.username=" + this.database.user(),
					"--demo.database.password=" + this.database.password()));
		}
		else {
			args.add("--leader.embedded-postgres.data-directory=" + this.embeddedData);
		}
		this.launcher = SampleApplication.application().run(args.toArray(String[]::new));
		this.browser = HeadlessChromium.start("The demo's browser test", 1200, 1150);
	}

	@AfterEach
	void stopEverything() {
		if (this.browser != null) {
			this.browser.close();
		}
		if (this.launcher != null) {
			List<ProcessHandle> nodes = new ArrayList<>(this.startedNodes);
			ProcessHandle.current().children().filter(DemoClusterViewBrowserTests::isNode).forEach(nodes::add);
			this.launcher.close();
			assertThat(nodes).allSatisfy((node) -> assertThat(node.isAlive())
				.withFailMessage("Node process %d outlived the launcher", node.pid())
				.isFalse());
		}
		if (this.database != null) {
			this.database.drop();
		}
	}

	@Test
	void pausingTheLeaderShowsTheTakeoverAndResumingItShowsItsFencedWritesRejected()
			throws IOException, InterruptedException {
		int launcherPort = ((WebServerApplicationContext) this.launcher).getWebServer().getPort();
		this.browser.open("http://127.0.0.1:" + launcherPort + "/cluster.html");
		// Three JVMs start on a shared machine: give them time.
		WebDriverWait startup = this.browser.waitUpTo(Duration.ofSeconds(120));
		startup.until((page) -> this.browser.texts("#nodes tr[data-name] .process")
			.equals(List.of("RUNNING", "RUNNING", "RUNNING"))
				&& this.browser.read("#nodes tr[data-node]", "element.dataset.node").size() == 3
				&& !this.browser.text("#groups tr[data-group='billing'] .leader").isEmpty());
		ProcessHandle.current().children().filter(DemoClusterViewBrowserTests::isNode).forEach(this.startedNodes::add);
		assertThat(this.startedNodes).hasSize(3);
		String leader = this.browser.text("#groups tr[data-group='billing'] .leader");
		long term = Long.parseLong(this.browser.text("#groups tr[data-group='billing'] .term"));
		JsonNode billing = get(port(leader), "/actuator/leadership/billing");
		assertThat(billing.get("role").asString()).isEqualTo("LEADER");
		assertThat(billing.get("term").asLong()).isEqualTo(term);

		HttpResponse<String> crossSite = this.http.send(HttpRequest
			.newBuilder(URI.create("http://127.0.0.1:" + launcherPort + "/demo/nodes/" + leader.substring(5) + "/kill"))
			.header("Origin", "http://example.com")
			.POST(HttpRequest.BodyPublishers.noBody())
			.build(), HttpResponse.BodyHandlers.ofString());
		assertThat(crossSite.statusCode()).isEqualTo(403);

		press(leader, "pause");
		WebDriverWait wait = this.browser.waitUpTo(Duration.ofSeconds(30));
		Matcher takeover = wait.until((page) -> {
			Matcher matcher = TAKEOVER.matcher(this.browser.text("#timeline"));
			return matcher.find() ? matcher : null;
		});
		assertThat(takeover.group(3)).isEqualTo(leader);
		assertThat(Long.parseLong(takeover.group(4))).isEqualTo(term);
		String successor = takeover.group(1);
		long newTerm = Long.parseLong(takeover.group(2));
		assertThat(successor).isNotEqualTo(leader);
		assertThat(newTerm).isGreaterThan(term);
		assertThat(this.browser.texts("#nodes tr[data-name='" + leader + "'] .process")).containsExactly("PAUSED");
		JsonNode successorBilling = get(port(successor), "/actuator/leadership/billing");
		assertThat(successorBilling.get("role").asString()).isEqualTo("LEADER");
		assertThat(successorBilling.get("term").asLong()).isEqualTo(newTerm);

		press(leader, "resume");
		String rejected = leader + ": rejected write of invoice-run under billing term " + term + ";";
		wait.until((page) -> this.browser.text("#timeline").contains(rejected));
		assertThat(this.browser.text("#timeline")).contains(leader + " resumed (SIGCONT)");
		JsonNode rejections = get(port(leader), "/rejected-writes");
		assertThat(rejections.valueStream()
			.filter((write) -> write.get("writer").asString().equals("invoice-run"))
			.filter((write) -> write.get("heldTerm").asLong() == term)
			.findFirst()).hasValueSatisfying((write) -> {
				assertThat(write.get("group").asString()).isEqualTo("billing");
				assertThat(write.get("currentTerm").asLong()).isGreaterThanOrEqualTo(newTerm);
			});
		this.browser.screenshot("demo-after-pause.png");

		// A graceful stop of the new leader hands billing over at once, without waiting
		// for its lease to run out.
		press(successor, "stop");
		Pattern handOver = Pattern.compile("billing: leader (node-\\d) \\(term (\\d+)\\), was " + successor
				+ " \\(term " + newTerm + "\\) \u2014 hand-over");
		Matcher stop = wait.until((page) -> {
			Matcher matcher = handOver.matcher(this.browser.text("#timeline"));
			return matcher.find() ? matcher : null;
		});
		assertThat(stop.group(1)).isNotEqualTo(successor);
		assertThat(Long.parseLong(stop.group(2))).isGreaterThan(newTerm);
		wait.until((page) -> this.browser.texts("#nodes tr[data-name='" + successor + "'] .process")
			.equals(List.of("STOPPED")));

		// billing opts in to crash takeover: kill -9 of its leader hands it over as the
		// leader's session ends, long before its lease would have run out.
		String third = stop.group(1);
		press(third, "kill");
		Pattern crash = Pattern.compile("billing: leader (node-\\d) \\(term (\\d+)\\), was " + third + " \\(term "
				+ stop.group(2) + "\\) \u2014 takeover, " + third + " is KILLED; seen ([\\d.]+) s after "
				+ "the kill \\(polled every 1 s\\), ([\\d.]+) s before the dead leader's lease would have run out: "
				+ "crash takeover");
		Matcher killed = wait.until((page) -> {
			Matcher matcher = crash.matcher(this.browser.text("#timeline"));
			return matcher.find() ? matcher : null;
		});
		assertThat(killed.group(1)).isNotEqualTo(third);
		assertThat(Double.parseDouble(killed.group(4))).isGreaterThan(0);
	}

	/**
	 * Returns whether a child of this JVM is a node: the only other child, Chromium's
	 * driver, is no JVM.
	 */
	private static boolean isNode(ProcessHandle process) {
		return process.info().command().map((command) -> command.endsWith("/java")).orElse(false);
	}

	private int port(String node) {
		return this.nodePorts.get(Integer.parseInt(node.substring("node-".length())) - 1);
	}

	private JsonNode get(int port, String path) {
		HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
			.timeout(Duration.ofSeconds(5))
			.build();
		return await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> {
			HttpResponse<String> response = this.http.send(request, HttpResponse.BodyHandlers.ofString());
			return (response.statusCode() == 200) ? Optional.of(this.json.readTree(response.body()))
					: Optional.<JsonNode>empty();
		}, Optional::isPresent).orElseThrow();
	}

	/**
	 * Clicks a node's button, found and clicked in one script, since the page replaces
	 * its buttons every second.
	 */
	private void press(String node, String action) {
		Object pressed = this.browser.script("""
				const button = document.querySelector(arguments[0]);
				if (!button || button.disabled) { return false; }
				button.click();
				return true;
				""", "#nodes tr[data-name='" + node + "'] button[data-action='" + action + "']");
		assertThat(pressed).withFailMessage("No enabled %s button for %s", action, node).isEqualTo(true);
	}

}
