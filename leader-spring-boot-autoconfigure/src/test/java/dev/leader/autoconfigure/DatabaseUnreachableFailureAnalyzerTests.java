package dev.leader.autoconfigure;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.UnknownHostException;
import java.sql.SQLException;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.LeaderDataSource;
import dev.leader.jdbc.JdbcStoresAutoConfiguration;
import dev.leader.mariadb.MariaDbStoresAutoConfiguration;
import dev.leader.postgres.PostgresStoresAutoConfiguration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.beans.factory.BeanCreationException;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.jdbc.CannotGetJdbcConnectionException;
import org.springframework.mock.env.MockEnvironment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

@ExtendWith(OutputCaptureExtension.class)
class DatabaseUnreachableFailureAnalyzerTests {

	@Test
	void databaseOnAClosedPortFailsStartupWithOneParagraphThatNamesTheUrlTheReasonAndWhatToSet(CapturedOutput output)
			throws IOException {
		int port = closedPort();
		SpringApplication application = new SpringApplication(FlywayApplication.class);
		application.setWebApplicationType(WebApplicationType.NONE);
		assertThatExceptionOfType(BeanCreationException.class).isThrownBy(() -> application.run(
				"--spring.datasource.url=jdbc:postgresql://127.0.0.1:" + port
						+ "/test?user=secret-user&password=secret-password&ApplicationName=embed",
				"--spring.datasource.hikari.connection-timeout=2000"));
		assertThat(output).contains("APPLICATION FAILED TO START")
			.contains("The application could not reach its database at jdbc:postgresql://127.0.0.1:" + port
					+ "/test?ApplicationName=embed (spring.datasource.url): Connection to 127.0.0.1:" + port
					+ " refused. Check that the hostname and port are correct and that the postmaster is accepting "
					+ "TCP/IP connections. (Connection refused) Bean 'flywayInitializer' met this first.")
			.contains("set spring.datasource.url")
			.contains("dev.leader:leader-spring-boot-embedded-postgres")
			.doesNotContain("secret-")
			.doesNotContain("\tat org.springframework.beans");
	}

	@Test
	void writablePrimaryCheckMeetingTheFailureFirstGetsTheSameAnalysis() throws IOException {
		int port = closedPort();
		String url = "jdbc:postgresql://127.0.0.1:" + port + "/test";
		new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
					PostgresStoresAutoConfiguration.class, MariaDbStoresAutoConfiguration.class,
					JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class))
			.withPropertyValues("spring.datasource.url=" + url, "spring.datasource.hikari.connection-timeout=2000")
			.run((context) -> {
				assertThat(context).hasFailed();
				FailureAnalysis analysis = analyzer(url).analyze(context.getStartupFailure());
				assertThat(analysis).isNotNull();
				assertThat(analysis.getDescription())
					.startsWith("The application could not reach its database at " + url
							+ " (spring.datasource.url): Connection to 127.0.0.1:" + port + " refused.")
					.contains("Bean 'leaderSchemaMigration' met this first.");
				assertThat(analysis.getAction())
					.startsWith("Start the database at that address, or set " + "spring.datasource.url");
			});
	}

	@Test
	void unreachableLeaderDataSourceIsNamedInsteadOfTheApplicationsUrl(CapturedOutput output) throws IOException {
		int port = closedPort();
		SpringApplication application = new SpringApplication(LeaderDataSourceApplication.class);
		application.setWebApplicationType(WebApplicationType.NONE);
		assertThatExceptionOfType(BeanCreationException.class).isThrownBy(() -> application.run(
				"--spring.datasource.url=jdbc:postgresql://127.0.0.1:" + closedPort() + "/app", "--test.port=" + port));
		assertThat(output).contains("APPLICATION FAILED TO START")
			.contains("The starter could not reach its database, the @LeaderDataSource bean 'coordinationDataSource': "
					+ "Connection to 127.0.0.1:" + port + " refused.")
			.contains("Bean 'leaderSchemaMigration' met this first.")
			.contains("Start the database that the @LeaderDataSource bean 'coordinationDataSource' connects to")
			.doesNotContain("(spring.datasource.url)");
	}

	@Test
	void unknownHostIsNamedInTheReason() {
		SQLException driverFailure = new SQLException("The connection attempt failed.", "08001",
				new UnknownHostException("db.example.invalid"));
		Throwable failure = new BeanCreationException("dataSource", "Could not create",
				new CannotGetJdbcConnectionException("Failed to obtain JDBC Connection", driverFailure));
		FailureAnalysis analysis = analyzer("jdbc:postgresql://db.example.invalid/app").analyze(failure);
		assertThat(analysis).isNotNull();
		assertThat(analysis.getDescription()).isEqualTo("The application could not reach its database at "
				+ "jdbc:postgresql://db.example.invalid/app (spring.datasource.url): The connection attempt failed. "
				+ "(unknown host db.example.invalid) Bean 'dataSource' met this first.");
	}

	@Test
	void failureThatIsNotAboutReachingTheDatabaseIsLeftToOtherAnalyzers() {
		SQLException wrongPassword = new SQLException("password authentication failed for user \"app\"", "28P01");
		Throwable failure = new BeanCreationException("flywayInitializer", "Could not migrate",
				new CannotGetJdbcConnectionException("Failed to obtain JDBC Connection", wrongPassword));
		assertThat(analyzer("jdbc:postgresql://127.0.0.1/app").analyze(failure)).isNull();
	}

	@Test
	void credentialsInTheUrlAreNeverShown() {
		assertThat(DatabaseUnreachableFailureAnalyzer.withoutCredentials(
				"jdbc:postgresql://app:pw@db:5432/x?user=app&password=pw&sslmode=require&sslpassword=k"))
			.isEqualTo("jdbc:postgresql://db:5432/x?sslmode=require");
		assertThat(DatabaseUnreachableFailureAnalyzer.withoutCredentials("jdbc:postgresql://db/x?PASSWORD=pw"))
			.isEqualTo("jdbc:postgresql://db/x");
		assertThat(DatabaseUnreachableFailureAnalyzer.withoutCredentials("jdbc:mysql://app:p@ss/word@db/shop"))
			.isEqualTo("jdbc:mysql://db/shop");
		assertThat(DatabaseUnreachableFailureAnalyzer
			.withoutCredentials("jdbc:mysql://address=(host=127.0.0.1)(port=3307)(user=app)(password=S3cret)/shop"))
			.doesNotContain("app)", "S3cret");
		assertThat(DatabaseUnreachableFailureAnalyzer
			.withoutCredentials("jdbc:mysql://(host=db,port=3306,user=app,password=S3cret)/shop"))
			.doesNotContain("S3cret", "user=app");
	}

	private static DatabaseUnreachableFailureAnalyzer analyzer(String url) {
		return new DatabaseUnreachableFailureAnalyzer(null,
				new MockEnvironment().withProperty("spring.datasource.url", url));
	}

	// A port that was free a moment ago; nothing listens on it once the socket is closed.
	private static int closedPort() throws IOException {
		try (ServerSocket socket = new ServerSocket(0)) {
			return socket.getLocalPort();
		}
	}

	@Configuration(proxyBeanMethods = false)
	@ImportAutoConfiguration({ DataSourceAutoConfiguration.class, FlywayAutoConfiguration.class,
			PostgresStoresAutoConfiguration.class, MariaDbStoresAutoConfiguration.class,
			JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class })
	static class FlywayApplication {

	}

	@Configuration(proxyBeanMethods = false)
	@ImportAutoConfiguration({ DataSourceAutoConfiguration.class, PostgresStoresAutoConfiguration.class,
			MariaDbStoresAutoConfiguration.class, JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class })
	static class LeaderDataSourceApplication {

		@Bean(defaultCandidate = false)
		@LeaderDataSource
		HikariDataSource coordinationDataSource(Environment environment) {
			HikariDataSource dataSource = new HikariDataSource();
			dataSource.setJdbcUrl(
					"jdbc:postgresql://127.0.0.1:" + environment.getRequiredProperty("test.port") + "/coordination");
			dataSource.setConnectionTimeout(2000);
			return dataSource;
		}

	}

}
