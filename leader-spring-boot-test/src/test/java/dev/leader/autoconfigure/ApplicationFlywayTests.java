package dev.leader.autoconfigure;

import java.io.IOException;
import java.net.URL;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;

import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.io.DefaultResourceLoader;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The starter leaves the application's Flyway alone: it migrates its own tables with
 * Flyway itself, without Spring Boot's Flyway auto-configuration, which the application
 * gets only by adding {@code spring-boot-starter-flyway}. Each test starts a whole
 * application with every auto-configuration of the test class path, on a fresh schema.
 */
class ApplicationFlywayTests {

	@RegisterExtension
	final SchemaContextRunners schema = new SchemaContextRunners();

	/**
	 * What the starter brings: Flyway, but not {@code spring-boot-flyway}, hidden here
	 * from the application's class loader, its auto-configuration list included. The
	 * issue that asked for it: an application that does not use Flyway got a
	 * {@code flyway_schema_history} table, and a "No migrations found" warning, from the
	 * starter's dependencies.
	 */
	@Test
	void applicationWithoutSpringBootsFlywayGetsTheStartersTablesAndNoFlywayHistory() throws Exception {
		try (ConfigurableApplicationContext context = run(new WithoutSpringBootFlyway())) {
			assertThat(context.containsBean("flywayInitializer")).isFalse();
			assertThat(context.containsBean("leaderSchemaMigration")).isTrue();
		}
		assertThat(this.schema.tables()).contains("leader_schema_history", "leader_leases")
			.doesNotContain("flyway_schema_history");
	}

	@Test
	void applicationWithSpringBootsFlywayMigratesItsOwnTablesFirstThenTheStarters() throws Exception {
		try (ConfigurableApplicationContext context = run(getClass().getClassLoader(),
				"--spring.flyway.locations=classpath:db/leader-wiring-tests",
				"--spring.flyway.schemas=" + this.schema.database().schema())) {
			assertThat(context.containsBean("flywayInitializer")).isTrue();
		}
		assertThat(this.schema.tables()).contains("flyway_schema_history", "application_table", "leader_schema_history",
				"leader_leases");
		List<LocalDateTime> applications = installedOn("flyway_schema_history");
		List<LocalDateTime> starters = installedOn("leader_schema_history");
		assertThat(applications).isNotEmpty();
		assertThat(starters).isNotEmpty();
		assertThat(applications.get(applications.size() - 1)).isBeforeOrEqualTo(starters.get(0));
	}

	private ConfigurableApplicationContext run(ClassLoader classLoader, String... args) {
		List<String> arguments = new ArrayList<>(List.of("--spring.datasource.url=" + this.schema.database().url(),
				"--spring.datasource.username=" + this.schema.database().user(),
				"--spring.datasource.password=" + this.schema.database().password(), "--leader.node.id=flyway-node"));
		arguments.addAll(List.of(args));
		return new SpringApplicationBuilder(AutoConfiguredApplication.class)
			.resourceLoader(new DefaultResourceLoader(classLoader))
			.web(WebApplicationType.NONE)
			.run(arguments.toArray(String[]::new));
	}

	private List<LocalDateTime> installedOn(String history) throws Exception {
		List<LocalDateTime> installed = new ArrayList<>();
		try (Connection connection = this.schema.database().connect();
				Statement statement = connection.createStatement();
				ResultSet rows = statement
					.executeQuery("SELECT installed_on FROM " + history + " ORDER BY installed_rank")) {
			while (rows.next()) {
				installed.add(rows.getObject(1, LocalDateTime.class));
			}
		}
		return installed;
	}

	/**
	 * The test class path without the jar of {@code spring-boot-flyway}: its classes, and
	 * its resources, such as the list of auto-configurations, which every jar names
	 * alike.
	 */
	private static final class WithoutSpringBootFlyway extends FilteredClassLoader {

		WithoutSpringBootFlyway() {
			super("org.springframework.boot.flyway");
		}

		@Override
		public Enumeration<URL> getResources(String name) throws IOException {
			List<URL> kept = new ArrayList<>();
			for (URL url : Collections.list(super.getResources(name))) {
				if (!url.getPath().contains("/spring-boot-flyway-")) {
					kept.add(url);
				}
			}
			return Collections.enumeration(kept);
		}

		@Override
		public @Nullable URL getResource(String name) {
			URL url = super.getResource(name);
			return (url != null && url.getPath().contains("/spring-boot-flyway-")) ? null : url;
		}

	}

	@Configuration(proxyBeanMethods = false)
	@EnableAutoConfiguration
	static class AutoConfiguredApplication {

	}

}
