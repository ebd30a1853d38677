package dev.leader.autoconfigure;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import dev.leader.jdbc.JdbcStoresAutoConfiguration;
import dev.leader.mariadb.MariaDbStoresAutoConfiguration;
import dev.leader.postgres.PostgresStoresAutoConfiguration;
import dev.leader.test.TestDatabase;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.AbstractApplicationContextRunner;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.MapPropertySource;

/**
 * The setup that the auto-configuration tests share, as a JUnit extension: a fresh schema
 * of the {@link TestDatabase} for each test, dropped after it, and context runners with
 * {@link DataSourceAutoConfiguration} and {@link LeaderAutoConfiguration} on that schema.
 * A test class registers it with {@code @RegisterExtension} and keeps a runner in a
 * field, adding only what differs: more auto-configurations and properties.
 */
final class SchemaContextRunners implements BeforeEachCallback, AfterEachCallback {

	private @Nullable TestDatabase database;

	@Override
	public void beforeEach(ExtensionContext context) {
		this.database = TestDatabase.createSchema();
	}

	@Override
	public void afterEach(ExtensionContext context) {
		if (this.database != null) {
			this.database.drop();
			this.database = null;
		}
	}

	/**
	 * Returns the schema of the running test.
	 * @return the database
	 */
	TestDatabase database() {
		if (this.database == null) {
			throw new IllegalStateException("No schema outside a test; register the extension with @RegisterExtension");
		}
		return this.database;
	}

	/**
	 * Returns the tables in the schema of the running test.
	 * @return the table names, sorted
	 * @throws SQLException if they cannot be read
	 */
	Set<String> tables() throws SQLException {
		Set<String> tables = new TreeSet<>();
		try (Connection connection = database().connect();
				PreparedStatement statement = connection
					.prepareStatement("SELECT table_name FROM information_schema.tables WHERE table_schema = ?")) {
			statement.setString(1, database().schema());
			try (ResultSet rows = statement.executeQuery()) {
				while (rows.next()) {
					tables.add(rows.getString(1));
				}
			}
		}
		return tables;
	}

	/**
	 * Returns a runner of the data source and the starter's auto-configuration, and the
	 * given ones, on the test's schema.
	 * @param autoConfigurations more auto-configurations
	 * @return the runner
	 */
	ApplicationContextRunner runner(Class<?>... autoConfigurations) {
		return on(new ApplicationContextRunner(), autoConfigurations);
	}

	/**
	 * Returns a runner of the data source, the stores' and the engine's
	 * auto-configuration, without the auto-configuration of any store family, on the
	 * test's schema.
	 * @return the runner
	 */
	ApplicationContextRunner runnerWithoutStoreFamilies() {
		return new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
					JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class))
			.withInitializer(this::useSchema);
	}

	/**
	 * Adds the data source and the starter's auto-configuration, the given ones, and the
	 * test's schema to a runner.
	 * @param <R> the type of runner
	 * @param runner the runner
	 * @param autoConfigurations more auto-configurations
	 * @return the runner
	 */
	<R extends AbstractApplicationContextRunner<R, ?, ?>> R on(R runner, Class<?>... autoConfigurations) {
		List<Class<?>> classes = new ArrayList<>(List.of(DataSourceAutoConfiguration.class,
				PostgresStoresAutoConfiguration.class, MariaDbStoresAutoConfiguration.class,
				JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class));
		classes.addAll(List.of(autoConfigurations));
		return runner.withConfiguration(AutoConfigurations.of(classes.toArray(Class<?>[]::new)))
			.withInitializer(this::useSchema);
	}

	// Read when a test runs a context, so that a runner can be a field, built before the
	// test's schema exists. Last in precedence: a test's own properties win.
	private void useSchema(ConfigurableApplicationContext context) {
		TestDatabase database = database();
		context.getEnvironment()
			.getPropertySources()
			.addLast(new MapPropertySource("schema", Map.of("spring.datasource.url", database.url(),
					"spring.datasource.username", database.user(), "spring.datasource.password", database.password())));
	}

}
