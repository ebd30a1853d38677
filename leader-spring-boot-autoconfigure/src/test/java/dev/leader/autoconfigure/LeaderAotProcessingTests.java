package dev.leader.autoconfigure;

import java.io.IOException;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

import javax.sql.DataSource;

import dev.leader.LeaderOnly;
import dev.leader.actuate.LeadershipEndpoint.DrainDescriptor;
import dev.leader.actuate.LeadershipEndpoint.RequestDescriptor;
import dev.leader.jdbc.JdbcStoresAutoConfiguration;
import dev.leader.mariadb.MariaDbStoresAutoConfiguration;
import dev.leader.postgres.PostgresStoresAutoConfiguration;
import org.junit.jupiter.api.Test;
import org.postgresql.core.PGStream;
import org.postgresql.core.QueryExecutorBase;

import org.springframework.aop.SpringProxy;
import org.springframework.aop.framework.Advised;
import org.springframework.aot.generate.ClassNameGenerator;
import org.springframework.aot.generate.DefaultGenerationContext;
import org.springframework.aot.generate.GeneratedFiles.Kind;
import org.springframework.aot.generate.InMemoryGeneratedFiles;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.predicate.RuntimeHintsPredicates;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.aot.ApplicationContextAotGenerator;
import org.springframework.context.support.GenericApplicationContext;
import org.springframework.core.DecoratingProxy;
import org.springframework.core.io.Resource;
import org.springframework.core.io.support.PathMatchingResourcePatternResolver;
import org.springframework.javapoet.ClassName;
import org.springframework.jdbc.datasource.SimpleDriverDataSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The starter's auto-configuration processed ahead of time, as
 * {@code spring-boot-maven-plugin:process-aot} processes an application that uses it:
 * what its native image keeps, checked with {@link RuntimeHintsPredicates}. Nothing is
 * started: AOT processing only reads bean definitions.
 */
class LeaderAotProcessingTests {

	private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(PostgresStoresAutoConfiguration.class,
				MariaDbStoresAutoConfiguration.class, JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class,
				LeaderEndpointAutoConfiguration.class))
		.withUserConfiguration(Application.class)
		.withPropertyValues("management.endpoints.web.exposure.include=leadership");

	@Test
	void nativeImageKeepsEveryMigrationOfEveryDatabase() throws IOException {
		Resource[] migrations = new PathMatchingResourcePatternResolver().getResources("classpath*:db/leader/*/*.sql");
		List<String> paths = new ArrayList<>();
		for (Resource migration : migrations) {
			String url = migration.getURL().toString();
			paths.add(url.substring(url.lastIndexOf("db/leader/")));
		}
		assertThat(paths).anyMatch((path) -> path.startsWith("db/leader/postgresql/"))
			.anyMatch((path) -> path.startsWith("db/leader/mariadb/"));
		processAheadOfTime((processed) -> assertThat(paths).allSatisfy(
				(path) -> assertThat(RuntimeHintsPredicates.resource().forResource(path)).accepts(processed.hints())));
	}

	@Test
	void nativeImageKeepsTheDriverFieldsThatTakeTheWaitOutOfNotifications() {
		processAheadOfTime((processed) -> {
			assertThat(RuntimeHintsPredicates.reflection().onFieldAccess(QueryExecutorBase.class, "pgStream"))
				.accepts(processed.hints());
			assertThat(
					RuntimeHintsPredicates.reflection().onFieldAccess(PGStream.class, "nextStreamAvailableCheckTime"))
				.accepts(processed.hints());
		});
	}

	// Spring's AOT processing does it when it generates the proxies: the starter adds no
	// hint of its own for them.
	@Test
	void leaderOnlyBeansGetClassProxiesAtBuildTimeAndKeepTheirMethodsForReflection() {
		processAheadOfTime((processed) -> {
			assertThat(processed.classes())
				.anyMatch((name) -> name.startsWith(Jobs.class.getName() + "$$SpringCGLIB$$"))
				.anyMatch((name) -> name.startsWith(LeaderOnlyJobs.class.getName() + "$$SpringCGLIB$$"));
			assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(Jobs.class, "settle"))
				.accepts(processed.hints());
			assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(LeaderOnlyJobs.class, "report"))
				.accepts(processed.hints());
		});
	}

	@Test
	void leaderOnlyBeansProxiedThroughTheirInterfacesKeepTheInterfacesMethodsForReflection() {
		processAheadOfTime((processed) -> {
			assertThat(RuntimeHintsPredicates.proxies()
				.forInterfaces(Report.class, SpringProxy.class, Advised.class, DecoratingProxy.class))
				.accepts(processed.hints());
			assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(Report.class, "report"))
				.accepts(processed.hints());
			assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(InterfaceJobs.class, "report"))
				.accepts(processed.hints());
		});
	}

	@Test
	void nativeImageKeepsWhatTheEndpointsDaemonOperationsAnswerForJson() {
		processAheadOfTime((processed) -> {
			for (Class<?> answer : List.of(DrainDescriptor.class, RequestDescriptor.class)) {
				assertThat(RuntimeHintsPredicates.reflection().onType(answer)).accepts(processed.hints());
				for (RecordComponent component : answer.getRecordComponents()) {
					assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(component.getAccessor()))
						.accepts(processed.hints());
				}
			}
		});
	}

	private void processAheadOfTime(Consumer<Processed> assertions) {
		this.contextRunner.prepare((context) -> {
			InMemoryGeneratedFiles files = new InMemoryGeneratedFiles();
			DefaultGenerationContext generation = new DefaultGenerationContext(
					new ClassNameGenerator(ClassName.get(LeaderAotProcessingTests.class)), files);
			new ApplicationContextAotGenerator()
				.processAheadOfTime((GenericApplicationContext) context.getSourceApplicationContext(), generation);
			generation.writeGeneratedContent();
			List<String> classes = files.getGeneratedFiles(Kind.CLASS)
				.keySet()
				.stream()
				.map((path) -> path.replace('/', '.').replaceAll("\\.class$", ""))
				.toList();
			assertions.accept(new Processed(generation.getRuntimeHints(), classes));
		});
	}

	private record Processed(RuntimeHints hints, List<String> classes) {

	}

	@Configuration(proxyBeanMethods = false)
	static class Application {

		@Bean
		DataSource dataSource() {
			return new SimpleDriverDataSource();
		}

		@Bean
		Jobs jobs() {
			return new Jobs();
		}

		@Bean
		InterfaceJobs interfaceJobs() {
			return new InterfaceJobs();
		}

		@Bean
		LeaderOnlyJobs leaderOnlyJobs() {
			return new LeaderOnlyJobs();
		}

	}

	static class Jobs {

		@LeaderOnly(group = "billing")
		void settle() {
		}

	}

	interface Report {

		void report();

	}

	// Proxied through its interface: no auto-configuration here forces class proxies.
	static class InterfaceJobs implements Report {

		@LeaderOnly
		@Override
		public void report() {
		}

	}

	@LeaderOnly
	static class LeaderOnlyJobs {

		void report() {
		}

	}

}
