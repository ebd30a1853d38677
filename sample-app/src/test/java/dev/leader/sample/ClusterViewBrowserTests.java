package dev.leader.sample;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

import dev.leader.LeaderInfo;
import dev.leader.Leadership;
import dev.leader.lease.LeaseSettings;
import dev.leader.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.WebDriverWait;

import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.resttestclient.autoconfigure.AutoConfigureRestTestClient;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.servlet.client.RestTestClient;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.hamcrest.Matchers.equalTo;

/**
 * The cluster view page ({@code /cluster.html}) in a real headless Chromium, driven by Debian's {@code chromedriver}:
 * the sample application and a second node share a fresh PostgreSQL schema, the page shows both nodes and the leader
 * of each group, and it follows a yield made through the actuator's write operation, which this test enables.
 * <p>
 * Never skipped: without Debian's {@code chromium} and {@code chromium-driver} packages it fails, saying how to install
 * them. The screenshot it takes is {@code target/cluster-view.png}, copied to the README's {@code docs/} by hand.
 */
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT,
		properties = { "leader.lease.duration=2s", "leader.lease.renew-interval=500ms",
				"leader.lease.retry-interval=500ms", "leader.lease.safety-margin=100ms", "leader.node.expiry=2s",
				"leader.lease.yield-cooldown=30s", "management.endpoint.leadership.access=unrestricted" })
@AutoConfigureRestTestClient
@DirtiesContext
class ClusterViewBrowserTests {

	private static final Path CHROMIUM = Paths.get("/usr/bin/chromium");

	private static final Path CHROMEDRIVER = Paths.get("/usr/bin/chromedriver");

	private static TestDatabase database;

	@LocalServerPort
	private int port;

	@Autowired
	private RestTestClient http;

	@Autowired
	private Leadership leadership;

	@Autowired
	private LeaseSettings settings;

	private OtherNode other;

	private WebDriver browser;

	@DynamicPropertySource
	static void useFreshSchema(DynamicPropertyRegistry registry) {
		database = TestDatabase.createSchema();
		registry.add("spring.datasource.url", database::url);
		registry.add("spring.datasource.username", database::user);
		registry.add("spring.datasource.password", database::password);
	}

	@TestConfiguration(proxyBeanMethods = false)
	static class SchemaConfiguration {

		@Bean
		DisposableBean dropSchemaOnClose() {
			return database::drop;
		}

	}

	@BeforeEach
	void startBrowserAndSecondNode() {
		assertThat(Files.isExecutable(CHROMIUM) && Files.isExecutable(CHROMEDRIVER))
			.withFailMessage("The cluster view test needs Debian's Chromium and its driver at %s and %s; install them "
					+ "with: apt-get install -y chromium chromium-driver", CHROMIUM, CHROMEDRIVER)
			.isTrue();
		await().atMost(Duration.ofSeconds(10)).until(() -> this.leadership.isLeader("billing"));
		this.other = OtherNode.start(database, this.settings, "default", "billing");
		ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(CHROMEDRIVER.toFile())
			.usingAnyFreePort()
			.build();
		ChromeOptions options = new ChromeOptions().setBinary(CHROMIUM.toFile())
			.addArguments("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
					"--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1100,820");
		this.browser = new ChromeDriver(service, options);
	}

	@AfterEach
	void stopBrowserAndSecondNode() {
		if (this.browser != null) {
			this.browser.quit();
		}
		if (this.other != null) {
			this.other.close();
		}
	}

	@Test
	void pageShowsTheLeaderOfEachGroupAndFollowsAYield() throws IOException {
		String node = this.leadership.nodeId();
		long term = this.leadership.token("billing").orElseThrow().term();
		this.browser.get("http://localhost:" + this.port + "/cluster.html");
		WebDriverWait wait = new WebDriverWait(this.browser, Duration.ofSeconds(10));
		wait.until((browser) -> text(By.id("node")).equals(node));
		wait.until((browser) -> groupCell("billing", "leader").equals(node)
				&& groupCell("billing", "term").equals(Long.toString(term)));
		wait.until((browser) -> nodeIds().containsAll(List.of(node, OtherNode.ID)));
		assertThat(groupCell("default", "leader")).isEqualTo(node);
		assertThat(text(By.cssSelector("#nodes tr[data-node='" + OtherNode.ID + "'] .badge"))).isEqualTo("ALIVE");

		// The other node waits for this node's release once it has read its lease, so the hand-over is immediate.
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
		wait.until((browser) -> groupCell("billing", "leader").equals(OtherNode.ID)
				&& groupCell("billing", "term").equals(Long.toString(otherTerm)));
		assertThat(text(By.cssSelector("#groups tr[data-group='billing'] .badge"))).isEqualTo("FOLLOWER");
		wait.until((browser) -> text(By.id("timeline"))
			.contains("billing: leader " + OtherNode.ID + " (term " + otherTerm + "), was " + node + " (term " + term
					+ ")"));
		Path screenshot = ((TakesScreenshot) this.browser).getScreenshotAs(OutputType.FILE).toPath();
		Files.copy(screenshot, Paths.get("target", "cluster-view.png"), StandardCopyOption.REPLACE_EXISTING);
	}

	private String groupCell(String group, String cell) {
		List<WebElement> found = this.browser
			.findElements(By.cssSelector("#groups tr[data-group='" + group + "'] ." + cell));
		return found.isEmpty() ? "" : found.get(0).getText();
	}

	private List<String> nodeIds() {
		return this.browser.findElements(By.cssSelector("#nodes tr[data-node]"))
			.stream()
			.map((row) -> row.getDomAttribute("data-node"))
			.toList();
	}

	private String text(By by) {
		List<WebElement> found = this.browser.findElements(by);
		return found.isEmpty() ? "" : found.get(0).getText();
	}

}
