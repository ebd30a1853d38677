package dev.leader.autoconfigure;

import dev.leader.lease.LeaderEngine;
import dev.leader.web.FollowerRead;
import dev.leader.web.FollowerReadAutoConfiguration;
import dev.leader.web.ForwardToLeader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.assertj.ApplicationContextAssertProvider;
import org.springframework.boot.test.context.runner.ContextConsumer;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.webmvc.autoconfigure.WebMvcAutoConfiguration;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RestController;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Tests for {@link FollowerReadAutoConfiguration}, against a fresh PostgreSQL schema: it
 * applies to servlet web applications with an engine only, and its settings are checked
 * at startup.
 */
class FollowerReadAutoConfigurationTests {

	private static final String[] BEANS = { "leaderFollowerReadWebMvcConfigurer", "leaderFollowerReadBodyAdvice",
			"leaderNearestNodeRouter", "leaderNodeAddressAdvertiser" };

	@RegisterExtension
	final SchemaContextRunners schema = new SchemaContextRunners();

	private final WebApplicationContextRunner contextRunner = this.schema.on(new WebApplicationContextRunner(),
			FollowerReadAutoConfiguration.class);

	private final WebApplicationContextRunner mvcContextRunner = this.contextRunner
		.withConfiguration(AutoConfigurations.of(WebMvcAutoConfiguration.class))
		.withPropertyValues("leader.node.id=web-node");

	@Test
	void servletWebApplicationGetsTheInterceptorTheBodyAdviceAndTheAddressAdvertiser() {
		this.contextRunner.withPropertyValues("leader.node.id=web-node").run(followerReadBeans(true));
	}

	@Test
	void webApplicationWithLeaderDisabledGetsThemTooAndServesEveryReadAlone() {
		this.contextRunner.withPropertyValues("leader.enabled=false", "leader.node.id=web-node")
			.run(followerReadBeans(true));
	}

	@Test
	void applicationThatIsNotAWebApplicationGetsNone() {
		this.schema.runner(FollowerReadAutoConfiguration.class)
			.withPropertyValues("leader.node.id=plain-node")
			.run(followerReadBeans(false));
	}

	@Test
	void followerReadOfAGroupThisNodeDoesNotApplyFailsStartupNamingTheHandler() {
		this.mvcContextRunner.withUserConfiguration(ReadsController.class)
			.run((context) -> assertThat(context).hasFailed()
				.getFailure()
				.hasMessageContaining("ReadsController#rate")
				.hasMessageContaining("is @FollowerRead(group = \"rates\"), but this node does not apply the log of "
						+ "group rates: add a LogApplier bean of that group"));
	}

	@Test
	void forwardToLeaderGroupJoinsThisNodesElection() {
		this.mvcContextRunner.withUserConfiguration(WritesController.class).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(LeaderEngine.class).groups()).contains("orders");
		});
	}

	@ParameterizedTest
	@CsvSource(delimiter = '|',
			textBlock = """
					leader.follower-reads.default-consistency=eventual | leader.follower-reads.default-consistency must be one of bookmark, bounded, index or leader, was 'eventual'
					leader.follower-reads.default-consistency=bounded  | leader.follower-reads.default-consistency must be index or leader
					leader.follower-reads.wait=0s                      | leader.follower-reads.wait must be more than 0 and at most 1 day, was PT0S
					leader.follower-reads.forward-timeout=-1s          | leader.follower-reads.forward-timeout must be more than 0 and at most 1 day, was PT-1S
					leader.follower-reads.retry-after=0s               | leader.follower-reads.retry-after must be at least 1 s
					""")
	void invalidFollowerReadSettingFailsStartupNamingTheProperty(String property, String message) {
		this.contextRunner.withPropertyValues("leader.node.id=web-node", property)
			.run((context) -> assertThat(context).hasFailed().getFailure().rootCause().hasMessageContaining(message));
	}

	private static <C extends ApplicationContextAssertProvider<?>> ContextConsumer<C> followerReadBeans(
			boolean present) {
		return (context) -> {
			assertThat(context).hasNotFailed();
			for (String bean : BEANS) {
				if (present) {
					assertThat(context).hasBean(bean);
				}
				else {
					assertThat(context).doesNotHaveBean(bean);
				}
			}
		};
	}

	@RestController
	static class ReadsController {

		@GetMapping("/rates/{code}")
		@FollowerRead(group = "rates")
		String rate(@PathVariable String code) {
			return code;
		}

	}

	@RestController
	static class WritesController {

		@PutMapping("/orders")
		@ForwardToLeader(group = "orders")
		String order() {
			return "ordered";
		}

	}

}
