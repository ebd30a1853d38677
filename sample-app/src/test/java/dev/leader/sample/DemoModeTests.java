package dev.leader.sample;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

import dev.leader.Leadership;
import dev.leader.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * What {@link SampleApplication#main} runs when {@code spring.datasource.url} is set: one
 * node, as before the demo, with none of the demo's controls. (Without it,
 * {@link DemoClusterViewBrowserTests} drives the demo.)
 */
class DemoModeTests {

	private final HttpClient http = HttpClient.newHttpClient();

	private TestDatabase database;

	private ConfigurableApplicationContext context;

	@AfterEach
	void close() {
		if (this.context != null) {
			this.context.close();
		}
		if (this.database != null) {
			this.database.drop();
		}
	}

	@Test
	void withADatasourceUrlMainRunsOneNodeWithoutTheDemoControls() throws Exception {
		this.database = TestDatabase.createSchema();
		this.context = SampleApplication.application()
			.run("--spring.datasource.url=" + this.database.url(),
					"--spring.datasource.username=" + this.database.user(),
					"--spring.datasource.password=" + this.database.password(), "--server.port=0",
					"--server.address=127.0.0.1");
		Leadership leadership = this.context.getBean(Leadership.class);
		await().atMost(Duration.ofSeconds(15)).until(() -> leadership.isLeader("billing"));
		assertThat(this.context.getBeanDefinitionNames()).noneMatch((name) -> name.toLowerCase().contains("demo"));
		assertThat(this.context.containsBean("demoNodeProcesses")).isFalse();
		int port = ((WebServerApplicationContext) this.context).getWebServer().getPort();
		assertThat(status(port, "GET", "/demo/cluster")).isEqualTo(404);
		assertThat(status(port, "POST", "/demo/nodes/1/kill")).isEqualTo(404);
		assertThat(status(port, "GET", "/rejected-writes")).isEqualTo(200);
		assertThat(status(port, "GET", "/actuator/leadership")).isEqualTo(200);
	}

	private int status(int port, String method, String path) throws Exception {
		HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
			.method(method, HttpRequest.BodyPublishers.noBody())
			.build();
		return this.http.send(request, HttpResponse.BodyHandlers.discarding()).statusCode();
	}

}
