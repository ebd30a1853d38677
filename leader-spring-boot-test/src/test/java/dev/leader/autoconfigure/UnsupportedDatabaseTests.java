package dev.leader.autoconfigure;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.LocalDateTime;

import dev.leader.test.MariaDbTestDatabase;
import org.assertj.core.api.AbstractStringAssert;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Configuration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatException;

/**
 * A database, or a driver, that the starter cannot coordinate on fails the application's
 * startup with Spring Boot's failure analysis (what was found and why it is refused, then
 * what to change), never with a stack trace: MariaDB through MySQL's driver
 * (Connector/J), H2 in file mode, and a URL of another database that does not answer at
 * startup.
 */
@ExtendWith(OutputCaptureExtension.class)
class UnsupportedDatabaseTests {

	private static MariaDbTestDatabase database;

	@BeforeAll
	static void createDatabase() {
		database = MariaDbTestDatabase.create();
	}

	@AfterAll
	static void dropDatabase() {
		if (database != null) {
			database.drop();
		}
	}

	@Test
	void mariaDbThroughMySqlsDriverFailsStartupWithAnAnalysisThatNamesMariaDbsDriver(CapturedOutput output) {
		assertThatException().isThrownBy(() -> run("--spring.datasource.url=" + connectorJUrl(),
				"--spring.datasource.username=" + database.user(),
				"--spring.datasource.password=" + database.password()));
		assertThatFailureAnalysisIsPrinted(output).contains("through MySQL Connector/J")
			.contains("the MariaDB stores run only through MariaDB's own driver")
			.contains("add the dependency org.mariadb.jdbc:mariadb-java-client")
			.contains("from jdbc:mysql:// to jdbc:mariadb://");
	}

	@Test
	void mariaDbThroughMySqlsDriverFailsStartupTheSameWayWhenTheStarterDoesNotMigrate(CapturedOutput output) {
		assertThatException().isThrownBy(() -> run("--spring.datasource.url=" + connectorJUrl(),
				"--spring.datasource.username=" + database.user(),
				"--spring.datasource.password=" + database.password(), "--leader.jdbc.migrate=false"));
		assertThatFailureAnalysisIsPrinted(output).contains("add the dependency org.mariadb.jdbc:mariadb-java-client");
	}

	@Test
	void h2InFileModeFailsStartupWithAnAnalysisThatNamesTheSupportedDatabases(@TempDir Path directory,
			CapturedOutput output) {
		assertThatException()
			.isThrownBy(() -> run("--spring.datasource.url=jdbc:h2:file:" + directory.resolve("app").toAbsolutePath()));
		assertThatFailureAnalysisIsPrinted(output).contains("which leads to H2 ")
			.contains("the starter supports PostgreSQL and MariaDB 10.11 or later")
			.contains("set leader.enabled=false");
	}

	@Test
	void mySqlUrlOfADatabaseThatDoesNotAnswerFailsStartupWhenTheStarterDoesNotMigrate(CapturedOutput output)
			throws IOException {
		int port = closedPort();
		assertThatException().isThrownBy(() -> run("--spring.datasource.url=jdbc:mysql://127.0.0.1:" + port + "/app",
				"--spring.datasource.username=secret-user", "--spring.datasource.password=secret-password",
				"--spring.datasource.hikari.connection-timeout=1000", "--leader.jdbc.migrate=false"));
		assertThatFailureAnalysisIsPrinted(output)
			.contains("could not tell which database the application's DataSource leads to")
			.contains("(spring.datasource.url, jdbc:mysql://…)")
			.contains("jdbc:mariadb://host:port/database")
			.doesNotContain("secret-");
	}

	/**
	 * Why MySQL's driver is refused: MariaDB's handshake announces it as MySQL 5.5.5,
	 * which Connector/J takes for a server without fractional seconds, so it sends a
	 * {@code LocalDateTime} parameter cut to the second. The stores bind the database's
	 * time of a grant so, and the lease would expire up to a second before its holder
	 * counts. If a version of Connector/J sends the fraction, this test fails, and the
	 * refusal is worth reconsidering.
	 */
	@Test
	void mySqlsDriverSendsTimesToMariaDbWithoutTheirFractionsOfASecond() throws Exception {
		LocalDateTime time = LocalDateTime.of(2026, 1, 1, 10, 0, 0, 900_000_000);
		try (Connection connection = DriverManager.getConnection(connectorJUrl(), database.user(), database.password());
				PreparedStatement statement = connection.prepareStatement("SELECT CAST(? AS DATETIME(6)) AS sent")) {
			assertThat(connection.getMetaData().getDriverName()).isEqualTo("MySQL Connector/J");
			statement.setObject(1, time);
			try (ResultSet rows = statement.executeQuery()) {
				rows.next();
				assertThat(rows.getObject("sent", LocalDateTime.class)).isEqualTo(time.withNano(0));
			}
		}
	}

	private static AbstractStringAssert<?> assertThatFailureAnalysisIsPrinted(CapturedOutput output) {
		return assertThat(output.toString()).contains("APPLICATION FAILED TO START")
			.contains("Description:")
			.contains("Action:")
			.doesNotContain("\tat org.springframework.beans");
	}

	private static String connectorJUrl() {
		return database.url().replaceFirst("^jdbc:mariadb:", "jdbc:mysql:");
	}

	private static void run(String... args) {
		SpringApplication application = new SpringApplication(LeaderApplication.class);
		application.setWebApplicationType(WebApplicationType.NONE);
		application.run(args);
	}

	// A port that was free a moment ago; nothing listens on it once the socket is closed.
	private static int closedPort() throws IOException {
		try (ServerSocket socket = new ServerSocket(0)) {
			return socket.getLocalPort();
		}
	}

	@Configuration(proxyBeanMethods = false)
	@ImportAutoConfiguration({ DataSourceAutoConfiguration.class, LeaderAutoConfiguration.class })
	static class LeaderApplication {

	}

}
