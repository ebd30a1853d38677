package dev.leader.test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.awaitility.Awaitility;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A MariaDB server of the test's own, from the machine's binaries
 * ({@code mariadb-install-db}, {@code mariadbd}), with the binary log on
 * ({@code --log-bin}), in a temporary directory on a free loopback port, for tests that
 * crash the server or change its global durability settings without touching the
 * machine's MariaDB, which other tests share. As a JUnit extension, register it with
 * {@code @RegisterExtension} before a {@link Cluster} on {@link #createDatabase}: it
 * starts the server before each test, and stops it and removes the directory after it.
 * Root logs in from 127.0.0.1 with an empty password.
 */
public final class TemporaryMariaDb implements BeforeEachCallback, AfterEachCallback {

	private static final Path INSTALL_DB = Path.of("/usr/bin/mariadb-install-db");

	private static final Path SERVER = Path.of("/usr/sbin/mariadbd");

	private @Nullable Path directory;

	private int port;

	private @Nullable Process process;

	@Override
	public void beforeEach(ExtensionContext context) throws IOException {
		if (!Files.isExecutable(INSTALL_DB) || !Files.isExecutable(SERVER)) {
			throw new IllegalStateException("This test starts a MariaDB server of its own and needs " + INSTALL_DB
					+ " and " + SERVER + ": install Debian's mariadb-server package (apt-get install mariadb-server)");
		}
		this.directory = Files.createTempDirectory("leader-mariadb-");
		this.port = TemporaryPostgres.freePort();
		run(List.of(INSTALL_DB.toString(), "--no-defaults", "--datadir=" + data(), "--user=root",
				"--auth-root-authentication-method=normal", "--skip-test-db"));
		start();
	}

	@Override
	public void afterEach(ExtensionContext context) {
		kill();
		Path directory = this.directory;
		this.directory = null;
		if (directory != null) {
			try (Stream<Path> paths = Files.walk(directory)) {
				paths.sorted(Comparator.reverseOrder()).forEach((path) -> path.toFile().delete());
			}
			catch (IOException ex) {
				// left to the system
			}
		}
	}

	/**
	 * Returns the server's JDBC URL, without a database.
	 * @return the URL
	 */
	public String url() {
		return "jdbc:mariadb://127.0.0.1:" + this.port + "/";
	}

	/**
	 * Creates a fresh database on the server, for a {@link Cluster}.
	 * @return the database
	 */
	public MariaDbTestDatabase createDatabase() {
		return MariaDbTestDatabase.createOn(url(), "root", "");
	}

	/**
	 * Sets global variables of the server, for example
	 * {@code "innodb_flush_log_at_trx_commit = 2"}.
	 * @param assignments the assignments
	 */
	public void setGlobal(String... assignments) {
		try (Connection connection = DriverManager.getConnection(url(), "root", "");
				Statement statement = connection.createStatement()) {
			for (String assignment : assignments) {
				statement.execute("SET GLOBAL " + assignment);
			}
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not set " + List.of(assignments), ex);
		}
	}

	/**
	 * Crashes the server with SIGKILL, as a crash of the process, and starts it again on
	 * the same data; the operating system keeps what the server wrote to its files, so
	 * only what it kept in its own memory is lost.
	 * @param down how long the server stays down
	 * @return when the server was asked to start again ({@link System#nanoTime()})
	 */
	public long crashAndRestart(Duration down) {
		kill();
		FaultHistory.sleepAsFault(down);
		long starting = System.nanoTime();
		start();
		return starting;
	}

	private void start() {
		try {
			this.process = new ProcessBuilder(SERVER.toString(), "--no-defaults", "--datadir=" + data(),
					"--port=" + this.port, "--bind-address=127.0.0.1", "--socket=" + this.directory.resolve("sock"),
					"--pid-file=" + this.directory.resolve("pid"), "--user=root", "--skip-name-resolve",
					"--log-bin=" + data().resolve("binlog"), "--server-id=1", "--innodb-buffer-pool-size=64M",
					"--max-connections=500")
				.redirectErrorStream(true)
				.redirectOutput(ProcessBuilder.Redirect.appendTo(this.directory.resolve("server.log").toFile()))
				.start();
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not start " + SERVER, ex);
		}
		Awaitility.await("MariaDB to accept connections on port " + this.port)
			.atMost(Duration.ofSeconds(60))
			.pollInterval(Duration.ofMillis(100))
			.ignoreExceptions()
			.until(() -> {
				try (Connection connection = DriverManager.getConnection(url(), "root", "")) {
					return connection.isValid(1);
				}
			});
	}

	private void kill() {
		Process process = this.process;
		this.process = null;
		if (process != null) {
			process.destroyForcibly();
			try {
				process.waitFor(30, TimeUnit.SECONDS);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		}
	}

	private Path data() {
		if (this.directory == null) {
			throw new IllegalStateException("No server: register the extension with @RegisterExtension");
		}
		return this.directory.resolve("data");
	}

	private void run(List<String> command) throws IOException {
		Process process = new ProcessBuilder(command).redirectErrorStream(true)
			.redirectOutput(ProcessBuilder.Redirect.appendTo(this.directory.resolve("install.log").toFile()))
			.start();
		try {
			if (!process.waitFor(120, TimeUnit.SECONDS) || process.exitValue() != 0) {
				process.destroyForcibly();
				throw new IllegalStateException(
						command.get(0) + " failed: " + Files.readString(this.directory.resolve("install.log")));
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted", ex);
		}
	}

}
