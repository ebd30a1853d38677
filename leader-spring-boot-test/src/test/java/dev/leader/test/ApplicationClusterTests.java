package dev.leader.test;

import java.time.Duration;
import java.util.Map;

import dev.leader.test.NodeEvent.Type;
import dev.leader.test.application.ClusterApplication;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * A {@link Cluster} of a Spring Boot application's own nodes, as an application's tests
 * start it: on the test class path, which holds DevTools and Docker Compose support here
 * as it does in many applications, and with the waits of the cluster failing as soon as
 * the nodes they wait on have exited.
 */
class ApplicationClusterTests {

	private static final String BILLING = "billing";

	// Far longer than a node takes to fail: a wait that fails before it did not wait it
	// out.
	private static final Duration STARTUP = Duration.ofSeconds(90);

	private static final Duration FAIL_FAST = Duration.ofSeconds(45);

	@RegisterExtension
	final Cluster cluster = Cluster.of(ClusterApplication.class)
		.withProperty("leader.groups", BILLING)
		.withProperty("leader.lease.duration", "2s")
		.withProperty("leader.lease.renew-interval", "500ms")
		.withProperty("leader.lease.retry-interval", "500ms");

	@Test
	void nodeOfAnApplicationWithDevToolsAndDockerComposeSupportOnItsClassPathStartsAndLeads() {
		NodeProcess node = this.cluster.startAll("node-a").get(0);
		assertThat(this.cluster.awaitSingleLeader(BILLING, STARTUP)).isSameAs(node);
		// DevTools would have run the application again on a thread of its own, in a
		// class loader of its own, and started a LiveReload server.
		assertThat(node.describe()).contains(ClusterApplication.class.getSimpleName())
			.doesNotContain("restartedMain")
			.doesNotContain("LiveReload");
	}

	@Test
	void propertiesOfANodeReplaceTheClustersRatherThanAddToThem() {
		this.cluster.start("node-a", Map.of("leader.groups", "audit"), Map.of()).awaitReady(STARTUP);
		this.cluster.awaitSingleLeader("audit", STARTUP);
		assertThat(this.cluster.lease(BILLING)).isEmpty();
	}

	@Test
	void awaitSingleLeaderFailsWithTheExitCodesAndOutputAsSoonAsEveryNodeHasExited() {
		// The renew interval plus this is more than the lease: startup validation fails.
		Map<String, String> invalid = Map.of("leader.lease.retry-interval", "2s");
		this.cluster.start("node-a", invalid, Map.of());
		this.cluster.start("node-b", invalid, Map.of());
		long started = System.nanoTime();
		assertThatExceptionOfType(AssertionError.class)
			.isThrownBy(() -> this.cluster.awaitSingleLeader(BILLING, STARTUP))
			.withMessageContaining("Every node exited before a single leader of billing")
			.withMessageContaining("node-a exited with 1")
			.withMessageContaining("node-b exited with 1")
			.withMessageContaining("leader.lease.retry-interval");
		assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(FAIL_FAST);
	}

	@Test
	void awaitGrantFailsAsSoonAsEveryNodeHasExited() {
		NodeProcess node = this.cluster.startAll("node-a").get(0);
		long term = this.cluster.awaitSingleLeader(BILLING, STARTUP)
			.lastEvent((event) -> event.is(Type.GRANTED, BILLING))
			.orElseThrow()
			.term();
		node.kill9();
		long killed = System.nanoTime();
		assertThatExceptionOfType(AssertionError.class)
			.isThrownBy(() -> this.cluster.awaitGrant(BILLING, term, STARTUP))
			.withMessageContaining("Every node exited before a grant of billing with a term above " + term)
			.withMessageContaining("node-a exited with 137");
		assertThat(Duration.ofNanos(System.nanoTime() - killed)).isLessThan(FAIL_FAST);
	}

}
