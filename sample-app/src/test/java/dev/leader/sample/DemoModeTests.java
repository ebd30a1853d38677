package dev.leader.sample;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

import dev.leader.Leadership;
import dev.leader.test.TestDatabase;
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

	@Test
	void withADatasourceUrlMainRunsOneNodeWithoutTheDemoControls() throws Exception {
		TestDatabase database = TestDatabase.createSchema();
		try (ConfigurableApplicationContext context = SampleApplication.application()
			.run("--spring.datasource.url=" + database.url(), "--spring.datasource.username=" + database.user(),
					"--spring.datasource.password=" + database.password(), "--server.port=0",
					"--server.address=127.0.0.1")) {
			Leadership leadership = context.getBean(Leadership.class);
			await().atMost(Duration.ofSeconds(15)).until(() -> leadership.isLeader("billing"));
			assertThat(context.getBeanDefinitionNames()).noneMatch((name) -> name.toLowerCase().contains("demo"));
			assertThat(context.containsBean("demoNodeProcesses")).isFalse();
			int port = ((WebServerApplicationContext) context).getWebServer().getPort();
			assertThat(status(port, "GET", "/demo/cluster")).isEqualTo(404);
			assertThat(status(port, "POST", "/demo/nodes/1/kill")).isEqualTo(404);
			assertThat(status(port, "GET", "/rejected-writes")).isEqualTo(200);
			assertThat(status(port, "GET", "/actuator/leadership")).isEqualTo(200);
		}
		finally {
			database.drop();
		}
	}

	private int status(int port, String method, String path) throws Exception {
		HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
			.method(method, HttpRequest.BodyPublishers.noBody())
			.build();
		return this.http.send(request, HttpResponse.BodyHandlers.discarding()).statusCode();
	}

}
