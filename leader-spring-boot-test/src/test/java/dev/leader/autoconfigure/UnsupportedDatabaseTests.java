package dev.leader.autoconfigure;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Path;

import dev.leader.jdbc.JdbcStoresAutoConfiguration;
import dev.leader.mariadb.MariaDbStoresAutoConfiguration;
import dev.leader.postgres.PostgresStoresAutoConfiguration;
import org.assertj.core.api.AbstractStringAssert;
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
 * A database that the starter cannot coordinate on fails the application's startup with
 * Spring Boot's failure analysis (what was found and why it is refused, then what to
 * change), never with a stack trace: H2 in file mode, and a URL of another database that
 * does not answer at startup.
 */
@ExtendWith(OutputCaptureExtension.class)
class UnsupportedDatabaseTests {

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
			.contains("(spring.datasource.url, jdbc:mysql:…)")
			.contains("jdbc:mariadb://host:port/database")
			.doesNotContain("secret-");
	}

	private static AbstractStringAssert<?> assertThatFailureAnalysisIsPrinted(CapturedOutput output) {
		return assertThat(output.toString()).contains("APPLICATION FAILED TO START")
			.contains("Description:")
			.contains("Action:")
			.doesNotContain("\tat org.springframework.beans");
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
	@ImportAutoConfiguration({ DataSourceAutoConfiguration.class, PostgresStoresAutoConfiguration.class,
			MariaDbStoresAutoConfiguration.class, JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class })
	static class LeaderApplication {

	}

}
