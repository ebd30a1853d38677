package dev.leader.embedded;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.postgresql.ds.PGSimpleDataSource;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.JdbcConnectionDetails;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.util.FileSystemUtils;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

class EmbeddedPostgresAutoConfigurationTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner().withConfiguration(
			AutoConfigurations.of(EmbeddedPostgresAutoConfiguration.class, DataSourceAutoConfiguration.class));

	@TempDir
	Path temp;

	@Test
	void applicationWithoutADatabaseGetsAPoolOnARealPostgreSqlServer() {
		this.runner.withPropertyValues("leader.embedded-postgres.data-directory=" + this.temp).run((context) -> {
			EmbeddedPostgresServer server = context.getBean(EmbeddedPostgresServer.class);
			assertThat(server.jdbcUrl()).isEqualTo("jdbc:postgresql://127.0.0.1:" + server.port() + "/postgres");
			HikariDataSource pool = context.getBean(HikariDataSource.class);
			assertThat(pool.getJdbcUrl()).isEqualTo(server.jdbcUrl());
			try (Connection connection = pool.getConnection();
					Statement statement = connection.createStatement();
					ResultSet result = statement.executeQuery("SHOW server_version_num")) {
				result.next();
				assertThat(result.getInt(1)).isGreaterThanOrEqualTo(150000);
			}
		});
	}

	@Test
	void notificationsReachAListeningSessionOfAnotherConnection() {
		this.runner.withPropertyValues("leader.embedded-postgres.data-directory=" + this.temp).run((context) -> {
			DataSource dataSource = context.getBean(DataSource.class);
			try (Connection listener = dataSource.getConnection(); Connection notifier = dataSource.getConnection()) {
				try (Statement statement = listener.createStatement()) {
					statement.execute("LISTEN embed_test");
				}
				try (Statement statement = notifier.createStatement()) {
					statement.execute("NOTIFY embed_test, 'hello'");
				}
				PGNotification[] notifications = listener.unwrap(PGConnection.class).getNotifications(10_000);
				assertThat(notifications).extracting(PGNotification::getName, PGNotification::getParameter)
					.containsExactly(org.assertj.core.groups.Tuple.tuple("embed_test", "hello"));
			}
		});
	}

	@Test
	void applicationWithItsOwnDataSourceGetsNoEmbeddedServer() {
		this.runner.withUserConfiguration(OwnDataSource.class).run((context) -> {
			assertThat(context).doesNotHaveBean(EmbeddedPostgresServer.class);
			assertThat(context).getBean(DataSource.class).isSameAs(context.getBean(OwnDataSource.class).dataSource);
		});
	}

	@Test
	void applicationWithConnectionDetailsGetsNoEmbeddedServer() {
		this.runner.withUserConfiguration(OwnConnectionDetails.class).run((context) -> {
			assertThat(context).doesNotHaveBean(EmbeddedPostgresServer.class);
			assertThat(context.getBean(HikariDataSource.class).getJdbcUrl())
				.isEqualTo("jdbc:postgresql://127.0.0.1:1/details");
		});
	}

	@Test
	void applicationWithADataSourceUrlGetsNoEmbeddedServer() {
		this.runner.withPropertyValues("spring.datasource.url=jdbc:postgresql://127.0.0.1:1/elsewhere")
			.run((context) -> {
				assertThat(context).doesNotHaveBean(EmbeddedPostgresServer.class);
				assertThat(context.getBean(HikariDataSource.class).getJdbcUrl())
					.isEqualTo("jdbc:postgresql://127.0.0.1:1/elsewhere");
			});
	}

	@Test
	void serverIsNotStartedWhenDisabled() {
		new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(EmbeddedPostgresAutoConfiguration.class))
			.withPropertyValues("leader.embedded-postgres.enabled=false",
					"leader.embedded-postgres.data-directory=" + this.temp)
			.run((context) -> {
				assertThat(context).hasNotFailed().doesNotHaveBean(EmbeddedPostgresServer.class);
				assertThat(this.temp).isEmptyDirectory();
			});
	}

	@Test
	void serverStopsWhenTheContextCloses() {
		int[] port = new int[1];
		this.runner.withPropertyValues("leader.embedded-postgres.data-directory=" + this.temp).run((context) -> {
			port[0] = context.getBean(EmbeddedPostgresServer.class).port();
			assertThat(EmbeddedPostgresServerTests.accepts(port[0])).isTrue();
		});
		assertThat(EmbeddedPostgresServerTests.accepts(port[0])).as("port %d after the context closed", port[0])
			.isFalse();
		assertThat(this.temp.resolve("postmaster.pid")).doesNotExist();
	}

	@Test
	void dataStaysInTheDocumentedDirectoryOnTheConfiguredPortAcrossRestarts() throws IOException {
		String name = "embed-test-" + ProcessHandle.current().pid();
		Path documented = Path.of(System.getProperty("java.io.tmpdir"), "leader-embedded-postgres", name);
		int port = freePort();
		ApplicationContextRunner named = this.runner.withPropertyValues("spring.application.name=" + name,
				"leader.embedded-postgres.port=" + port);
		try {
			named.run((context) -> {
				EmbeddedPostgresServer server = context.getBean(EmbeddedPostgresServer.class);
				assertThat(server.dataDirectory()).isEqualTo(documented);
				assertThat(server.port()).isEqualTo(port);
				assertThat(documented.resolve("PG_VERSION")).exists();
				execute(context.getBean(DataSource.class), "CREATE TABLE kept (id int); INSERT INTO kept VALUES (42)");
			});
			named.run((context) -> {
				try (Connection connection = context.getBean(DataSource.class).getConnection();
						Statement statement = connection.createStatement();
						ResultSet result = statement.executeQuery("SELECT id FROM kept")) {
					assertThat(result.next()).isTrue();
					assertThat(result.getInt(1)).isEqualTo(42);
				}
			});
		}
		finally {
			FileSystemUtils.deleteRecursively(documented);
		}
	}

	@Test
	void serverThatCannotStartFailsWithTheDirectoryAndWhatToChange() throws IOException {
		Path notADirectory = Files.writeString(this.temp.resolve("file"), "x");
		this.runner.withPropertyValues("leader.embedded-postgres.data-directory=" + notADirectory).run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context.getStartupFailure()).rootCause().isNotNull();
			assertThatExceptionOfType(IllegalStateException.class).isThrownBy(() -> {
				throw findIllegalState(context.getStartupFailure());
			})
				.withMessageContaining(notADirectory.toString())
				.withMessageContaining("leader.embedded-postgres.data-directory");
		});
	}

	private static IllegalStateException findIllegalState(Throwable failure) {
		for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
			if (cause instanceof IllegalStateException illegalState
					&& illegalState.getMessage().startsWith("Could not start the embedded PostgreSQL")) {
				return illegalState;
			}
		}
		throw new AssertionError("No start failure of the embedded server in " + failure);
	}

	private static void execute(DataSource dataSource, String sql) throws SQLException {
		try (Connection connection = dataSource.getConnection(); Statement statement = connection.createStatement()) {
			statement.execute(sql);
		}
	}

	private static int freePort() throws IOException {
		try (ServerSocket socket = new ServerSocket(0)) {
			return socket.getLocalPort();
		}
	}

	// As a Testcontainers or Docker Compose service connection registers it.
	@Configuration(proxyBeanMethods = false)
	static class OwnConnectionDetails {

		@Bean
		JdbcConnectionDetails connectionDetails() {
			return new JdbcConnectionDetails() {

				@Override
				public String getUsername() {
					return "owner";
				}

				@Override
				public String getPassword() {
					return "";
				}

				@Override
				public String getJdbcUrl() {
					return "jdbc:postgresql://127.0.0.1:1/details";
				}

			};
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class OwnDataSource {

		final PGSimpleDataSource dataSource = new PGSimpleDataSource();

		@Bean
		DataSource dataSource() {
			this.dataSource.setURL("jdbc:postgresql://127.0.0.1:1/own");
			return this.dataSource;
		}

	}

}
