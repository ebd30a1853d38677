package dev.leader.embedded;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

class EmbeddedPostgresServerTests {

	@TempDir
	Path data;

	@AfterEach
	void stopAnyServerLeftOnTheDirectory() throws Exception {
		Path pidFile = this.data.resolve("postmaster.pid");
		if (Files.exists(pidFile)) {
			Optional<ProcessHandle> server = ProcessHandle
				.of(Long.parseLong(Files.readAllLines(pidFile).get(0).trim()));
			if (server.isPresent()) {
				// Gone before the temporary directory is deleted under it.
				server.get().destroy();
				server.get().onExit().get(30, TimeUnit.SECONDS);
			}
		}
	}

	@Test
	void serverLeftRunningByAKilledJvmIsStoppedWhenTheNextOneStartsOnItsDirectory() throws Exception {
		Process child = startServerInChildJvm();
		int orphanPort;
		try (BufferedReader output = output(child)) {
			orphanPort = readPort(output);
		}
		finally {
			child.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
		}
		assertThat(accepts(orphanPort)).as("the killed JVM's server still runs").isTrue();
		try (EmbeddedPostgresServer server = EmbeddedPostgresServer.start(this.data, 0)) {
			assertThat(accepts(orphanPort) && orphanPort != server.port()).as("the orphan on port %d", orphanPort)
				.isFalse();
			try (Connection connection = DriverManager.getConnection(server.jdbcUrl(), server.username(), "");
					Statement statement = connection.createStatement();
					ResultSet result = statement.executeQuery("SELECT count(*) FROM left_by_the_child")) {
				assertThat(result.next()).isTrue();
				assertThat(result.getInt(1)).isEqualTo(1);
			}
		}
	}

	@Test
	void serverOfAnApplicationThatStillRunsIsLeftRunningAndTheNextOneFailsToStart() throws Exception {
		Process child = startServerInChildJvm();
		try (BufferedReader output = output(child)) {
			int port = readPort(output);
			Throwable failure = catchThrowable(() -> EmbeddedPostgresServer.start(this.data, 0));
			assertThat(accepts(port)).as("the running application's server on port %d", port).isTrue();
			assertThat(failure).isInstanceOf(IllegalStateException.class)
				.hasMessageContaining("Another application's embedded PostgreSQL server runs on")
				.hasMessageContaining("leader.embedded-postgres.data-directory");
		}
		finally {
			child.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
		}
	}

	private Process startServerInChildJvm() throws IOException {
		return new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
				System.getProperty("java.class.path"), StartServer.class.getName(), this.data.toString())
			.redirectErrorStream(true)
			.start();
	}

	private static BufferedReader output(Process child) {
		return new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
	}

	private static int readPort(BufferedReader output) throws IOException {
		List<String> seen = new java.util.ArrayList<>();
		for (String line = output.readLine(); line != null; line = output.readLine()) {
			if (line.startsWith("READY ")) {
				return Integer.parseInt(line.substring(6).trim());
			}
			seen.add(line);
		}
		throw new AssertionError("The child JVM ended without starting its server:\n" + String.join("\n", seen));
	}

	/**
	 * Returns whether a server listens on the loopback port.
	 */
	static boolean accepts(int port) {
		try (Socket socket = new Socket()) {
			socket.connect(new InetSocketAddress("127.0.0.1", port), 1000);
			return true;
		}
		catch (IOException ex) {
			return false;
		}
	}

	/**
	 * Starts a server on the directory, writes a row, prints its port and waits to be
	 * killed.
	 */
	public static final class StartServer {

		public static void main(String[] args) throws Exception {
			EmbeddedPostgresServer server = EmbeddedPostgresServer.start(Path.of(args[0]), 0);
			try (Connection connection = DriverManager.getConnection(server.jdbcUrl(), server.username(), "");
					Statement statement = connection.createStatement()) {
				statement.execute("CREATE TABLE left_by_the_child (id int); INSERT INTO left_by_the_child VALUES (1)");
			}
			System.out.println("READY " + server.port());
			System.out.flush();
			Thread.sleep(Long.MAX_VALUE);
		}

	}

}
