package dev.leader.autoconfigure;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

import dev.leader.DaemonAgent;
import dev.leader.FencingToken;
import dev.leader.Leadership;
import dev.leader.actuate.LeaderMeters;
import dev.leader.actuate.LeadershipEndpoint;
import dev.leader.actuate.LeadershipEndpoint.DrainDescriptor;
import dev.leader.actuate.LeadershipEndpoint.RequestDescriptor;
import dev.leader.actuate.LeadershipHealthIndicator;
import dev.leader.daemon.DaemonObservations;
import io.micrometer.core.instrument.MeterRegistry;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import org.springframework.boot.actuate.autoconfigure.endpoint.EndpointAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.endpoint.jackson.JacksonEndpointAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.endpoint.web.WebEndpointAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.web.server.ManagementContextAutoConfiguration;
import org.springframework.boot.actuate.endpoint.EndpointAccessResolver;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.OperationFilter;
import org.springframework.boot.actuate.endpoint.invoke.ParameterValueMapper;
import org.springframework.boot.actuate.endpoint.web.EndpointMediaTypes;
import org.springframework.boot.actuate.endpoint.web.ExposableWebEndpoint;
import org.springframework.boot.actuate.endpoint.web.WebEndpointsSupplier;
import org.springframework.boot.actuate.endpoint.web.WebOperation;
import org.springframework.boot.actuate.endpoint.web.annotation.WebEndpointDiscoverer;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.http.converter.autoconfigure.HttpMessageConvertersAutoConfiguration;
import org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration;
import org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration;
import org.springframework.boot.servlet.autoconfigure.actuate.web.ServletManagementContextAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableWebApplicationContext;
import org.springframework.boot.test.context.runner.AbstractApplicationContextRunner;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.tomcat.autoconfigure.servlet.TomcatServletWebServerAutoConfiguration;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.boot.web.server.servlet.context.AnnotationConfigServletWebServerApplicationContext;
import org.springframework.boot.webmvc.autoconfigure.DispatcherServletAutoConfiguration;
import org.springframework.boot.webmvc.autoconfigure.WebMvcAutoConfiguration;
import org.springframework.context.ApplicationContext;
import org.springframework.jdbc.core.simple.JdbcClient;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * Tests for the daemon operations of the {@code leadership} endpoint, in Java and over
 * HTTP, the daemon metrics and health, and assignment notifications, with nodes as
 * application contexts on a fresh PostgreSQL schema.
 */
class DaemonOperationsTests {

	private static final Duration WAIT = Duration.ofSeconds(15);

	private static final HttpClient HTTP = HttpClient.newHttpClient();

	@RegisterExtension
	final SchemaContextRunners schema = new SchemaContextRunners();

	private JdbcClient jdbc;

	private com.zaxxer.hikari.HikariDataSource dataSource;

	@BeforeEach
	void openPool() {
		this.dataSource = this.schema.database().dataSource(2);
	}

	@AfterEach
	void closePool() {
		this.dataSource.close();
	}

	private ApplicationContextRunner node(String id, String... properties) {
		return node(new ApplicationContextRunner(), id, properties);
	}

	// A node that serves the actuator on a random port, with the write operations
	// granted.
	private WebApplicationContextRunner webNode(String id, String... properties) {
		return node(new WebApplicationContextRunner(AnnotationConfigServletWebServerApplicationContext::new), id,
				properties)
			.withConfiguration(AutoConfigurations.of(TomcatServletWebServerAutoConfiguration.class,
					DispatcherServletAutoConfiguration.class, WebMvcAutoConfiguration.class,
					HttpMessageConvertersAutoConfiguration.class, JacksonAutoConfiguration.class,
					EndpointAutoConfiguration.class, JacksonEndpointAutoConfiguration.class,
					WebEndpointAutoConfiguration.class, ManagementContextAutoConfiguration.class,
					ServletManagementContextAutoConfiguration.class))
			.withPropertyValues("server.port=0", "management.endpoint.leadership.access=UNRESTRICTED");
	}

	private <R extends AbstractApplicationContextRunner<R, ?, ?>> R node(R runner, String id, String... properties) {
		return this.schema
			.on(runner, LeaderEndpointAutoConfiguration.class, ObservationAutoConfiguration.class,
					MetricsAutoConfiguration.class, CompositeMeterRegistryAutoConfiguration.class,
					SimpleMetricsExportAutoConfiguration.class, LeaderMetricsAutoConfiguration.class)
			.withPropertyValues("spring.datasource.hikari.maximum-pool-size=4", "leader.node.id=" + id,
					"leader.lease.duration=2s", "leader.lease.renew-interval=300ms",
					"leader.lease.retry-interval=300ms", "leader.lease.safety-margin=100ms", "leader.node.expiry=2s",
					"leader.daemons.settle-window=0s", "leader.daemons.ack-timeout=2s",
					"leader.daemons.drain-timeout=2s", "management.endpoints.web.exposure.include=leadership,health")
			.withPropertyValues(properties)
			.withBean(DaemonEvents.class);
	}

	private JdbcClient jdbc() {
		if (this.jdbc == null) {
			this.jdbc = JdbcClient.create(this.dataSource);
		}
		return this.jdbc;
	}

	private Optional<String> placement(String daemon) {
		return jdbc()
			.sql("SELECT node_id || ' ' || state || ' ' || generation FROM leader_assignments "
					+ "WHERE daemon_name = ?")
			.param(daemon)
			.query(String.class)
			.optional();
	}

	private long requests() {
		return jdbc().sql("SELECT count(*) FROM leader_daemon_requests").query(Long.class).single();
	}

	@Test
	void daemonWriteOperationsAreAbsentWithTheDefaultAccessAndPresentWhenGranted() {
		ApplicationContextRunner web = this.schema
			.runner(LeaderEndpointAutoConfiguration.class, EndpointAutoConfiguration.class)
			.withPropertyValues("leader.node.id=web-node", "management.endpoints.web.exposure.include=leadership");
		web.run((context) -> assertThat(operations(context)).containsExactlyInAnyOrder("GET leadership",
				"GET leadership/{group}"));
		web.withPropertyValues("management.endpoint.leadership.access=UNRESTRICTED")
			.run((context) -> assertThat(operations(context)).containsExactlyInAnyOrder("GET leadership",
					"GET leadership/{group}", "POST leadership", "POST leadership/{group}",
					"POST leadership/{kind}/{name}"));
	}

	// The web endpoints as Spring Boot's web endpoint support discovers them, filtered by
	// the configured access.
	private static List<String> operations(ApplicationContext context) {
		WebEndpointsSupplier endpoints = new WebEndpointDiscoverer(context, context.getBean(ParameterValueMapper.class),
				EndpointMediaTypes.DEFAULT, List.of(), List.of(), List.of(), List.of(),
				List.of(OperationFilter.byAccess(context.getBean(EndpointAccessResolver.class))));
		ExposableWebEndpoint leadership = endpoints.getEndpoints()
			.stream()
			.filter((endpoint) -> endpoint.getEndpointId().toString().equals("leadership"))
			.findFirst()
			.orElseThrow();
		return leadership.getOperations()
			.stream()
			.map(WebOperation::getRequestPredicate)
			.map((predicate) -> predicate.getHttpMethod() + " " + predicate.getPath())
			.toList();
	}

	static Stream<Arguments> rejectedWrites() {
		String on = "daemons on";
		String off = "daemons off";
		return Stream.of(
				// Yield a group.
				rejected("/nogroup", null, on, 404), rejected("/nogroup", "{}", on, 404),
				rejected("/default", "not json", on, 400),
				// Rebalance.
				rejected("", null, off, 404), rejected("", "{\"node\":", on, 400),
				// Move a daemon.
				rejected("/daemons/ghost-daemon", null, on, 404),
				rejected("/daemons/ghost-daemon", "{\"node\":\"web-node\"}", on, 404),
				rejected("/daemons/mover", null, off, 404), rejected("/daemon/mover", null, on, 404),
				rejected("/daemons/mover", "{\"node\":5}", on, 400),
				rejected("/daemons/mover", "{\"node\":\"not a node id\"}", on, 400),
				rejected("/daemons/mover", "{\"node\":\"" + "n".repeat(121) + "\"}", on, 400),
				rejected("/daemons/mover", "{\"node\":{\"id\":\"web-node\"}}", on, 400),
				rejected("/daemons/mover", "{\"node\":\"ghost-node\"}", on, 400),
				rejected("/daemons/mover", "{\"drained\":false}", on, 400),
				// Drain or undrain a node.
				rejected("/nodes/ghost-node", null, on, 404),
				rejected("/nodes/ghost-node", "{\"drained\":false}", on, 404),
				rejected("/nodes/web-node", null, off, 404),
				rejected("/nodes/web-node", "{\"drained\":\"maybe\"}", on, 400),
				rejected("/nodes/web-node", "{\"drained\":[true]}", on, 400),
				rejected("/nodes/web-node", "{\"node\":\"web-node\"}", on, 400),
				rejected("/nodes/web-node", "not json", on, 400));
	}

	private static Arguments rejected(String path, @Nullable String body, String daemons, int status) {
		return Arguments.of("/actuator/leadership" + path, body, daemons, status);
	}

	@ParameterizedTest(name = "POST {0} {1} with {2} answers {3}")
	@MethodSource("rejectedWrites")
	void writeOperationWithAnUnknownTargetOrAMalformedBodyAnswersItsStatusOverHttpAndChangesNothing(String path,
			@Nullable String body, String daemons, int status) {
		webNode("web-node", "leader.daemons.enabled=" + daemons.equals("daemons on"))
			.withBean("mover", DaemonAgent.class, Waiter::new)
			.run((context) -> {
				Leadership leadership = context.getBean(Leadership.class);
				await().atMost(WAIT).until(() -> leadership.isLeader("default"));
				if (daemons.equals("daemons on")) {
					await().atMost(WAIT).until(() -> placement("mover"), Optional.of("web-node ACTIVE 1")::equals);
				}
				long term = leadership.token("default").orElseThrow().term();
				// The endpoint is served, so that a 404 below comes from the operation.
				assertThat(http(context, "GET", "/actuator/leadership/default", null).statusCode()).isEqualTo(200);
				assertThat(http(context, "POST", path, body).statusCode()).isEqualTo(status);
				assertThat(requests()).isZero();
				assertThat(jdbc().sql("SELECT count(*) FROM leader_nodes WHERE drained").query(Long.class).single())
					.isZero();
				assertThat(leadership.token("default")).map(FencingToken::term).hasValue(term);
				if (daemons.equals("daemons on")) {
					assertThat(placement("mover")).hasValue("web-node ACTIVE 1");
				}
			});
	}

	@Test
	void writeOperationsOverHttpAnswerTheirOutcome() {
		webNode("web-node").withBean("mover", DaemonAgent.class, Waiter::new).run((context) -> {
			await().atMost(WAIT).until(() -> placement("mover"), Optional.of("web-node ACTIVE 1")::equals);
			HttpResponse<String> drained = http(context, "POST", "/actuator/leadership/nodes/web-node", null);
			assertThat(drained.statusCode()).isEqualTo(200);
			assertThat(drained.body()).contains("\"drained\":true").contains("\"daemons\":[\"mover\"]");
			HttpResponse<String> undrained = http(context, "POST", "/actuator/leadership/nodes/web-node",
					"{\"drained\":false}");
			assertThat(undrained.statusCode()).isEqualTo(200);
			assertThat(undrained.body()).contains("\"drained\":false");
			assertThat(jdbc().sql("SELECT count(*) FROM leader_nodes WHERE drained").query(Long.class).single())
				.isZero();
			HttpResponse<String> rebalance = http(context, "POST", "/actuator/leadership", null);
			assertThat(rebalance.statusCode()).isEqualTo(200);
			assertThat(rebalance.body()).contains("\"kind\":\"REBALANCE\"");
			HttpResponse<String> yielded = http(context, "POST", "/actuator/leadership/default", null);
			assertThat(yielded.statusCode()).isEqualTo(200);
			assertThat(yielded.body()).contains("\"yielded\":true");
		});
	}

	private static HttpResponse<String> http(AssertableWebApplicationContext context, String method, String path,
			@Nullable String body) throws IOException, InterruptedException {
		int port = ((WebServerApplicationContext) context.getSourceApplicationContext()).getWebServer().getPort();
		HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
			.timeout(WAIT);
		if (method.equals("POST")) {
			// Even without a body: the operations that take one answer 415 to a request
			// of another type.
			request.header("Content-Type", "application/json");
		}
		request.method(method,
				(body != null) ? HttpRequest.BodyPublishers.ofString(body) : HttpRequest.BodyPublishers.noBody());
		return HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
	}

	@Test
	void moveAndDrainRequestedOnAFollowerAreCarriedOutByTheLeaderAndBadNamesChangeNothing() {
		node("node-a").withBean("mover", DaemonAgent.class, Waiter::new).run((a) -> {
			await().atMost(WAIT).until(() -> placement("mover"), Optional.of("node-a ACTIVE 1")::equals);
			node("node-b").withBean("mover", DaemonAgent.class, Waiter::new).run((b) -> {
				LeadershipEndpoint follower = b.getBean(LeadershipEndpoint.class);
				assertThat(b.getBean(Leadership.class).isLeader("default")).isFalse();
				await().atMost(WAIT)
					.until(() -> jdbc().sql("SELECT count(*) FROM leader_nodes WHERE 'mover' = ANY (daemons)")
						.query(Long.class)
						.single() == 2);
				// Bad input: 404 (null) for unknown names in the path, 400 for an
				// unusable target, nothing recorded.
				assertThat(follower.daemonOperation("daemons", "ghost-daemon", null, null)).isNull();
				assertThat(follower.daemonOperation("nodes", "ghost-node", null, null)).isNull();
				assertThat(follower.daemonOperation("daemon", "mover", null, null)).isNull();
				assertThatExceptionOfType(InvalidEndpointRequestException.class)
					.isThrownBy(() -> follower.daemonOperation("daemons", "mover", "ghost-node", null))
					.withMessage("Unknown node 'ghost-node'");
				assertThatExceptionOfType(InvalidEndpointRequestException.class)
					.isThrownBy(() -> follower.daemonOperation("daemons", "mover", null, false));
				assertThat(requests()).isZero();
				assertThat(placement("mover")).hasValue("node-a ACTIVE 1");

				// Move, asked on the follower: the leader revokes it on node-a and
				// assigns it to node-b.
				RequestDescriptor move = (RequestDescriptor) follower.daemonOperation("daemons", "mover", "node-b",
						null);
				assertThat(move.kind()).isEqualTo("MOVE");
				assertThat(move.daemon()).isEqualTo("mover");
				assertThat(move.node()).isEqualTo("node-b");
				await().atMost(WAIT).until(() -> placement("mover"), Optional.of("node-b ACTIVE 2")::equals);
				assertThat(requests()).isZero();
				assertThat(b.getBean(DaemonEvents.class).started("mover")).isEqualTo(1);

				// Drain node-b: the daemon goes back to node-a, and stays there while
				// node-b is drained.
				DrainDescriptor drain = (DrainDescriptor) follower.daemonOperation("nodes", "node-b", null, null);
				assertThat(drain).isEqualTo(new DrainDescriptor("node-b", true, List.of("mover")));
				await().atMost(WAIT).until(() -> placement("mover"), Optional.of("node-a ACTIVE 3")::equals);
				assertThatExceptionOfType(InvalidEndpointRequestException.class)
					.isThrownBy(() -> follower.daemonOperation("daemons", "mover", "node-b", null))
					.withMessageContaining("is drained");
				assertThatExceptionOfType(InvalidEndpointRequestException.class)
					.isThrownBy(() -> follower.daemonOperation("daemons", "mover", null, null))
					.withMessageContaining("no other live, undrained node");
				RequestDescriptor rebalance = a.getBean(LeadershipEndpoint.class).rebalance();
				assertThat(rebalance.kind()).isEqualTo("REBALANCE");
				await().atMost(WAIT).until(() -> requests() == 0);
				assertThat(placement("mover")).hasValue("node-a ACTIVE 3");
				assertThat(follower.daemonOperation("nodes", "node-b", null, false))
					.isEqualTo(new DrainDescriptor("node-b", false, List.of()));

				// The leader's metrics count the moves by cause and the assignments by
				// state.
				MeterRegistry registry = a.getBean(MeterRegistry.class);
				assertThat(registry.get(LeaderMeters.DAEMON_MOVES.getName())
					.tag("cause", "requested")
					.functionCounter()
					.count()).isEqualTo(1);
				assertThat(registry.get(LeaderMeters.DAEMON_MOVES.getName())
					.tag("cause", "drained")
					.functionCounter()
					.count()).isEqualTo(1);
				assertThat(registry.get(LeaderMeters.DAEMON_MOVES.getName())
					.tag("cause", "rebalance")
					.functionCounter()
					.count()).isZero();
				assertThat(registry.get(LeaderMeters.ASSIGNMENTS.getName()).tag("state", "active").gauge().value())
					.isEqualTo(1);
				assertThat(registry.get(LeaderMeters.ASSIGNMENTS.getName()).tag("state", "revoking").gauge().value())
					.isZero();
				assertThat(registry.get(DaemonObservations.CYCLE.getName()).tag("role", "leader").timer().count())
					.isPositive();
				assertThat(b.getBean(MeterRegistry.class)
					.get(DaemonObservations.CYCLE.getName())
					.tag("role", "node")
					.timer()
					.count()).isPositive();
			});
		});
	}

	@Test
	void leaderHealthIsDegradedWhileADaemonThatNoLiveNodeHasStaysUnassigned() {
		node("healthy").withBean("steady", DaemonAgent.class, Waiter::new).run((context) -> {
			LeadershipHealthIndicator indicator = context.getBean(LeadershipHealthIndicator.class);
			await().atMost(WAIT).until(() -> placement("steady"), Optional.of("healthy ACTIVE 1")::equals);
			assertThat(indicator.health(true).getStatus()).isEqualTo(Status.UP);
			// A node that had the daemon 'orphan' died: it is listed, dead, until
			// forgotten at twice the expiry.
			jdbc().sql("""
					INSERT INTO leader_nodes (node_id, name, host, pid, started_at, heartbeat_at, daemons)
					VALUES ('gone', 'gone', 'host', 1, clock_timestamp() - interval '1 minute',
					        clock_timestamp() - interval '2500 milliseconds', '{orphan}')
					""").update();
			Health degraded = await().atMost(WAIT)
				.until(() -> indicator.health(true),
						(health) -> health.getStatus().equals(LeadershipHealthIndicator.DEGRADED));
			assertThat(degraded.getDetails()).containsEntry("coordinator", "reachable")
				.containsEntry("reason", "1 daemon(s) unassigned or stuck past their timeouts")
				.containsEntry("daemons", Map.of("orphan", "unassigned: no live, undrained node that has it"));
			jdbc().sql("DELETE FROM leader_nodes WHERE node_id = 'gone'").update();
			await().atMost(WAIT).until(() -> indicator.health(true).getStatus(), Status.UP::equals);
		});
	}

	@Test
	void notifiedNodeStartsItsDaemonWellBeforeItsNextPoll() {
		// Every node polls with its heartbeat, every 10 s here; the leader sees the
		// worker at its own next heartbeat.
		String[] slow = { "leader.lease.renew-interval=10s", "leader.lease.duration=30s", "leader.node.expiry=20s",
				"leader.daemons.ack-timeout=30s" };
		node("leading", slow).run((leader) -> {
			await().atMost(WAIT).until(() -> leader.getBean(Leadership.class).isLeader("default"));
			node("working", slow).withBean("quick", DaemonAgent.class, Waiter::new).run((worker) -> {
				await().atMost(Duration.ofSeconds(15))
					.until(() -> worker.getBean(DaemonEvents.class).started("quick") == 1);
				// The agent's thread publishes its start while the coordinator's thread
				// acknowledges.
				await().atMost(Duration.ofSeconds(2))
					.untilAsserted(() -> assertThat(placement("quick")).hasValue("working ACTIVE 1"));
				long ackMillis = jdbc()
					.sql("SELECT (extract(epoch from (acked_at - assigned_at)) * 1000)::bigint "
							+ "FROM leader_assignments WHERE daemon_name = 'quick'")
					.query(Long.class)
					.single();
				// Without the notification, the worker would acknowledge at its next
				// poll: within 300 ms of the assignment only by a 3 % chance.
				assertThat(ackMillis).isLessThan(300);
			});
		});
	}

	static class Waiter implements DaemonAgent {

		@Override
		public void run(dev.leader.DaemonContext context) throws InterruptedException {
			context.awaitCancellation(Duration.ofMinutes(5));
		}

	}

}
