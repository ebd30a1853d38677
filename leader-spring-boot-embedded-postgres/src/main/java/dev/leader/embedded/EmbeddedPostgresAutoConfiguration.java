package dev.leader.embedded;

import java.nio.file.Path;

import javax.sql.DataSource;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.JdbcConnectionDetails;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.core.env.Environment;

/**
 * Starts an {@link EmbeddedPostgresServer} when the application configures no database:
 * no {@link DataSource} bean, no {@link JdbcConnectionDetails} (such as a Testcontainers
 * or Docker Compose service connection) and neither {@code spring.datasource.url} nor
 * {@code spring.datasource.jndi-name}. Spring Boot's own
 * {@link DataSourceAutoConfiguration} then builds the application's pool on the server's
 * {@link JdbcConnectionDetails}, with every {@code spring.datasource.hikari.*} setting.
 * The server stops when the context closes.
 */
@AutoConfiguration(before = DataSourceAutoConfiguration.class)
@ConditionalOnBooleanProperty(name = "leader.embedded-postgres.enabled", matchIfMissing = true)
@ConditionalOnMissingBean({ DataSource.class, JdbcConnectionDetails.class })
@Conditional(OnNoDataSourceUrlCondition.class)
@EnableConfigurationProperties(EmbeddedPostgresProperties.class)
public final class EmbeddedPostgresAutoConfiguration {

	private static final Log logger = LogFactory.getLog(EmbeddedPostgresAutoConfiguration.class);

	@Bean(destroyMethod = "close")
	@ConditionalOnMissingBean
	EmbeddedPostgresServer embeddedPostgresServer(EmbeddedPostgresProperties properties, Environment environment) {
		Path dataDirectory = (properties.getDataDirectory() != null) ? properties.getDataDirectory()
				: defaultDataDirectory(environment);
		EmbeddedPostgresServer server = EmbeddedPostgresServer.start(dataDirectory, properties.getPort());
		logger.info("No database configured: started embedded PostgreSQL at " + server.jdbcUrl() + " (user "
				+ server.username() + "), data in " + server.dataDirectory());
		return server;
	}

	@Bean
	@ConditionalOnMissingBean
	JdbcConnectionDetails embeddedPostgresConnectionDetails(EmbeddedPostgresServer server) {
		return new EmbeddedPostgresConnectionDetails(server);
	}

	// Outside the library's own working directory (java.io.tmpdir/embedded-pg), whose
	// idle sub-directories it deletes as stale.
	static Path defaultDataDirectory(Environment environment) {
		String name = environment.getProperty("spring.application.name", "application");
		return Path.of(System.getProperty("java.io.tmpdir"), "leader-embedded-postgres",
				name.replaceAll("[^A-Za-z0-9._-]", "_"));
	}

	private record EmbeddedPostgresConnectionDetails(EmbeddedPostgresServer server) implements JdbcConnectionDetails {

		@Override
		public String getUsername() {
			return this.server.username();
		}

		@Override
		public String getPassword() {
			return "";
		}

		@Override
		public String getJdbcUrl() {
			return this.server.jdbcUrl();
		}

	}

}
