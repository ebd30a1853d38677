package dev.leader.autoconfigure;

import java.time.Duration;

import dev.leader.FencingToken;
import dev.leader.Leadership;
import dev.leader.actuate.LeadershipEndpoint;
import dev.leader.actuate.LeadershipEndpoint.LeadershipDescriptor;
import dev.leader.actuate.LeadershipEndpoint.LogDescriptor;
import dev.leader.actuate.LeadershipEndpoint.Role;
import dev.leader.actuate.LeadershipEndpoint.YieldDescriptor;
import dev.leader.actuate.LeadershipEndpointWebExtension;
import dev.leader.actuate.LeadershipHealthAssertions;
import dev.leader.actuate.LeadershipHealthIndicator;
import dev.leader.log.Bookmark;
import dev.leader.log.DecisionLog;
import dev.leader.log.RecordingApplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Tests for {@link LeaderEndpointAutoConfiguration}, each against a fresh PostgreSQL
 * schema.
 */
class LeaderEndpointAutoConfigurationTests {

	@RegisterExtension
	final SchemaContextRunners schema = new SchemaContextRunners();

	private final ApplicationContextRunner contextRunner = this.schema.runner(LeaderEndpointAutoConfiguration.class)
		.withPropertyValues("leader.node.id=test-node");

	@Test
	void endpointIsAutoConfiguredWhenExposed() {
		this.contextRunner.withPropertyValues("management.endpoints.web.exposure.include=leadership").run((context) -> {
			assertThat(context).hasSingleBean(LeadershipEndpoint.class)
				.hasSingleBean(LeadershipEndpointWebExtension.class);
			LeadershipDescriptor descriptor = context.getBean(LeadershipEndpoint.class).leadership();
			assertThat(descriptor.node()).isEqualTo("test-node");
			assertThat(descriptor.groups()).containsOnlyKeys("default");
		});
	}

	@Test
	void endpointShowsTheAppliedBookmarkLagAndStalenessOfEachGroupWithADecisionLog() {
		this.contextRunner.withPropertyValues("management.endpoints.web.exposure.include=leadership")
			.withBean(RecordingApplier.class, () -> new RecordingApplier("prices"))
			.run((context) -> {
				Leadership leadership = context.getBean(Leadership.class);
				LeadershipEndpoint endpoint = context.getBean(LeadershipEndpoint.class);
				DecisionLog log = context.getBean(DecisionLog.class);
				assertThat(leadership.awaitLeadership("prices", Duration.ofSeconds(10))).isTrue();
				FencingToken token = leadership.token("prices").orElseThrow();
				log.append(token, "price", "a");
				Bookmark last = log.append(token, "price", "b");
				assertThat(log.awaitReadIndex("prices", Duration.ofSeconds(10))).isTrue();
				LogDescriptor prices = endpoint.group("prices").log();
				assertThat(prices).isNotNull();
				assertThat(prices.applied()).isEqualTo(last.toString());
				assertThat(prices.appliedIndex()).isEqualTo(2);
				assertThat(prices.lagEntries()).isZero();
				assertThat(prices.stalenessMillis()).isNotNull().isBetween(0L, 10_000L);
				assertThat(prices.halted()).isNull();
				assertThat(endpoint.leadership().groups()).containsOnlyKeys("default", "prices");
				assertThat(endpoint.leadership().groups().get("default").log()).as("a group without applier").isNull();
			});
	}

	@Test
	void webExtensionIsNotAutoConfiguredWhenTheEndpointIsExposedOverJmxOnly() {
		this.contextRunner
			.withPropertyValues("spring.jmx.enabled=true", "management.endpoints.jmx.exposure.include=leadership")
			.run((context) -> assertThat(context).hasSingleBean(LeadershipEndpoint.class)
				.doesNotHaveBean(LeadershipEndpointWebExtension.class));
	}

	@Test
	void yieldOperationMakesThisNodeStepDownForTheCooldown() {
		this.contextRunner.withPropertyValues("management.endpoints.web.exposure.include=leadership").run((context) -> {
			Leadership leadership = context.getBean(Leadership.class);
			LeadershipEndpoint endpoint = context.getBean(LeadershipEndpoint.class);
			await().atMost(Duration.ofSeconds(10)).until(() -> leadership.isLeader("default"));
			assertThat(endpoint.yieldGroup("default")).isEqualTo(new YieldDescriptor("default", true, 10_000));
			assertThat(leadership.isLeader("default")).isFalse();
			assertThat(endpoint.group("default").role()).isEqualTo(Role.FOLLOWER);
			assertThat(endpoint.yieldGroup("default")).isEqualTo(new YieldDescriptor("default", false, 0));
			assertThat(endpoint.yieldGroup("unknown")).isNull();
		});
	}

	@Test
	void endpointIsNotAutoConfiguredWhenNotExposed() {
		this.contextRunner.run((context) -> assertThat(context).hasSingleBean(Leadership.class)
			.doesNotHaveBean(LeadershipEndpoint.class));
	}

	@Test
	void endpointIsNotAutoConfiguredWhenItsAccessIsNone() {
		// Upper case: the runner's environment lacks the lenient enum conversion that
		// SpringApplication installs.
		this.contextRunner
			.withPropertyValues("management.endpoints.web.exposure.include=leadership",
					"management.endpoint.leadership.access=NONE")
			.run((context) -> assertThat(context).hasSingleBean(Leadership.class)
				.doesNotHaveBean(LeadershipEndpoint.class));
	}

	@Test
	void endpointIsNotAutoConfiguredWithoutActuatorEndpointsOnTheClasspath() {
		this.contextRunner.withClassLoader(new FilteredClassLoader(Endpoint.class))
			.withPropertyValues("management.endpoints.web.exposure.include=leadership")
			.run((context) -> assertThat(context).hasSingleBean(Leadership.class)
				.doesNotHaveBean(LeadershipEndpoint.class));
	}

	@Test
	void healthIndicatorIsAutoConfiguredAndReportsUpOnceTheDatabaseIsReached() {
		this.contextRunner.run((context) -> {
			assertThat(context).hasSingleBean(LeadershipHealthIndicator.class);
			HealthIndicator indicator = context.getBean(LeadershipHealthIndicator.class);
			Health health = await().atMost(Duration.ofSeconds(10))
				.until(() -> indicator.health(true), (candidate) -> candidate.getStatus().equals(Status.UP));
			LeadershipHealthAssertions.assertLeadsTheDefaultGroup(health, "test-node", 9_800)
				.containsEntry("term", context.getBean(Leadership.class).token("default").orElseThrow().term());
		});
	}

	@Test
	void healthIndicatorCanBeDisabled() {
		this.contextRunner.withPropertyValues("management.health.leadership.enabled=false")
			.run((context) -> assertThat(context).hasSingleBean(Leadership.class)
				.doesNotHaveBean(LeadershipHealthIndicator.class));
	}

	@Test
	void healthIndicatorIsNotAutoConfiguredWithoutHealthOnTheClasspath() {
		this.contextRunner.withClassLoader(new FilteredClassLoader(HealthIndicator.class))
			.run((context) -> assertThat(context).hasSingleBean(Leadership.class)
				.doesNotHaveBean(LeadershipHealthIndicator.class));
	}

	@Test
	void endpointAndHealthIndicatorShowTheNodeAloneWhenLeaderIsDisabled() {
		this.contextRunner
			.withPropertyValues("leader.enabled=false", "management.endpoints.web.exposure.include=leadership")
			.run((context) -> {
				assertThat(context).hasNotFailed()
					.hasSingleBean(Leadership.class)
					.hasSingleBean(LeadershipEndpoint.class)
					.hasSingleBean(LeadershipHealthIndicator.class);
				LeadershipDescriptor descriptor = context.getBean(LeadershipEndpoint.class).leadership();
				assertThat(descriptor.mode()).isEqualTo("alone");
				assertThat(descriptor.modeReason()).isEqualTo("leader.enabled=false");
			});
	}

}
