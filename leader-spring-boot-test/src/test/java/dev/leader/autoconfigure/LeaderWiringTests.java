package dev.leader.autoconfigure;

import java.lang.reflect.Proxy;
import java.time.Duration;

import dev.leader.LeaderOnly;
import dev.leader.Leadership;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.aop.support.AopUtils;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Tests for how the starter fits into the application's context: the order of database
 * initialization, and the application's choice of proxies.
 */
class LeaderWiringTests {

	@RegisterExtension
	final SchemaContextRunners schema = new SchemaContextRunners();

	private final ApplicationContextRunner contextRunner = this.schema.runner()
		.withPropertyValues("leader.node.id=test-node");

	@Test
	void storesAreCreatedAfterTheStarterSchemaWhichIsMigratedAfterTheApplicationsFlywayMigrations() {
		this.contextRunner.withConfiguration(AutoConfigurations.of(FlywayAutoConfiguration.class))
			.withPropertyValues("spring.flyway.schemas=" + this.schema.database().schema(),
					"spring.flyway.locations=classpath:db/leader-wiring-tests")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				var beanFactory = context.getBeanFactory();
				assertThat(beanFactory.getBeanDefinition("leaderSchemaMigration").getDependsOn())
					.contains("flywayInitializer");
				for (String store : new String[] { "leaderCoordinationStore", "leaderDaemonStore",
						"leaderFencingStore" }) {
					assertThat(beanFactory.getBeanDefinition(store).getDependsOn()).as(store)
						.contains("flywayInitializer", "leaderSchemaMigration");
				}
			});
	}

	@Test
	void leaderOnlyAppliesWithoutSpringBootsAopAutoConfiguration() {
		this.contextRunner.withBean("job", LeaderJob.class, LeaderJob::new).run((context) -> {
			Job job = context.getBean(Job.class);
			assertThat(AopUtils.isAopProxy(job)).isTrue();
			await().atMost(Duration.ofSeconds(10)).until(() -> context.getBean(Leadership.class).isLeader("jobs"));
			assertThat(job.run()).isEqualTo("ran");
		});
	}

	@Test
	void leaderOnlyBeanGetsAClassProxyByDefault() {
		this.contextRunner.withConfiguration(AutoConfigurations.of(AopAutoConfiguration.class))
			.withBean("job", LeaderJob.class, LeaderJob::new)
			.run((context) -> assertThat(AopUtils.isCglibProxy(context.getBean(Job.class))).isTrue());
	}

	@Test
	void leaderOnlyBeanGetsAnInterfaceProxyWhenTheApplicationAsksForOne() {
		this.contextRunner.withConfiguration(AutoConfigurations.of(AopAutoConfiguration.class))
			.withPropertyValues("spring.aop.proxy-target-class=false")
			.withBean("job", LeaderJob.class, LeaderJob::new)
			.run((context) -> {
				Job job = context.getBean(Job.class);
				assertThat(Proxy.isProxyClass(job.getClass())).isTrue();
				await().atMost(Duration.ofSeconds(10)).until(() -> context.getBean(Leadership.class).isLeader("jobs"));
				assertThat(job.run()).isEqualTo("ran");
			});
	}

	interface Job {

		String run();

	}

	static class LeaderJob implements Job {

		@Override
		@LeaderOnly(group = "jobs")
		public String run() {
			return "ran";
		}

	}

}
