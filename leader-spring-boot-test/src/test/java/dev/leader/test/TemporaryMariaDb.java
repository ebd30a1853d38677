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
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * A MariaDB server of the test's own, for server settings that cannot be changed on a
 * running server, such as {@code log_bin}: Debian's {@code mariadbd}, with a data
 * directory that {@code mariadb-install-db} creates in a temporary directory, on a free
 * loopback port, with the server options the test gives and no option file. Its
 * {@code root} user connects from 127.0.0.1 without a password. {@link #close()} stops it
 * and removes the directory. About four seconds to start on a busy 2-core machine, most
 * of it {@code mariadb-install-db}.
 */
public final class TemporaryMariaDb implements AutoCloseable {

	private static final Path SERVER = Path
		.of(System.getenv().getOrDefault("LEADER_TEST_MARIADBD", "/usr/sbin/mariadbd"));

	private static final Path INSTALL = Path
		.of(System.getenv().getOrDefault("LEADER_TEST_MARIADB_INSTALL_DB", "/usr/bin/mariadb-install-db"));

	// Small logs and buffers: the server holds a few test databases.
	private static final List<String> SMALL = List.of("--innodb-log-file-size=8M", "--innodb-buffer-pool-size=32M");

	private final Path directory;

	private final int port;

	private final List<String> options;

	private @Nullable Process process;

	private TemporaryMariaDb(Path directory, List<String> options) throws IOException {
		this.directory = directory;
		this.port = TemporaryPostgres.freePort();
		this.options = options;
	}

	/**
	 * Starts a server.
	 * @param options server options besides the data directory, the port and the sockets,
	 * for example {@code --log-bin}
	 * @return the running server
	 */
	public static TemporaryMariaDb start(String... options) {
		for (Path binary : List.of(SERVER, INSTALL)) {
			if (!Files.isExecutable(binary)) {
				throw new IllegalStateException("This test starts a MariaDB server of its own and needs " + binary
						+ ": install Debian's mariadb-server package (apt-get install mariadb-server), or set "
						+ "LEADER_TEST_MARIADBD and LEADER_TEST_MARIADB_INSTALL_DB to the binaries");
			}
		}
		return TemporaryPostgres.startOrClose("Could not start a temporary MariaDB",
				() -> new TemporaryMariaDb(Files.createTempDirectory("leader-mariadb-server-"), List.of(options)),
				(server) -> {
					List<String> install = new ArrayList<>(
							List.of(INSTALL.toString(), "--no-defaults", "--datadir=" + server.data(),
									"--auth-root-authentication-method=normal", "--skip-test-db"));
					install.addAll(asRoot());
					install.addAll(SMALL);
					TemporaryPostgres.run(install, false);
					server.launch();
				}, TemporaryMariaDb::close);
	}

	private Path data() {
		return this.directory.resolve("data");
	}

	private void launch() throws IOException {
		List<String> command = new ArrayList<>(List.of(SERVER.toString(), "--no-defaults", "--datadir=" + data(),
				"--bind-address=127.0.0.1", "--port=" + this.port, "--socket=" + this.directory.resolve("mariadb.sock"),
				"--pid-file=" + this.directory.resolve("mariadb.pid"), "--skip-name-resolve",
				"--log-error=" + this.directory.resolve("error.log")));
		command.addAll(asRoot());
		command.addAll(SMALL);
		command.addAll(this.options);
		this.process = new ProcessBuilder(command).redirectErrorStream(true)
			.redirectOutput(ProcessBuilder.Redirect.appendTo(this.directory.resolve("output.log").toFile()))
			.start();
		awaitAnswering();
	}

	/**
	 * Creates a fresh database on the server, for a {@link Cluster}.
	 * @return the database
	 */
	public MariaDbTestDatabase createDatabase() {
		return MariaDbTestDatabase.createOn(url(""), "root", "");
	}

	/**
	 * Sets global variables of the server, for example
	 * {@code "innodb_flush_log_at_trx_commit = 2"}.
	 * @param assignments the assignments
	 */
	public void setGlobal(String... assignments) {
		execute(Arrays.stream(assignments).map((assignment) -> "SET GLOBAL " + assignment).toArray(String[]::new));
	}

	/**
	 * Crashes the server with SIGKILL, as a crash of the process, and starts it again on
	 * the same data and options; the operating system keeps what the server wrote to its
	 * files, so only what it kept in its own memory is lost.
	 * @param down how long the server stays down
	 * @return when the server was asked to start again ({@link System#nanoTime()})
	 */
	public long crashAndRestart(Duration down) {
		Process process = this.process;
		if (process != null) {
			try {
				process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				throw new IllegalStateException("Interrupted while MariaDB was crashed", ex);
			}
		}
		FaultHistory.sleepAsFault(down);
		long starting = System.nanoTime();
		try {
			launch();
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not start " + SERVER + " again", ex);
		}
		return starting;
	}

	/**
	 * Returns a JDBC URL of a database of this server.
	 * @param database the database, or empty for none
	 * @return the URL
	 */
	public String url(String database) {
		return "jdbc:mariadb://127.0.0.1:" + this.port + "/" + database;
	}

	/**
	 * Runs statements as {@code root}, for example {@code SET GLOBAL}.
	 * @param sql the statements, one each
	 */
	public void execute(String... sql) {
		try (Connection connection = DriverManager.getConnection(url(""), "root", "");
				Statement statement = connection.createStatement()) {
			for (String each : sql) {
				statement.execute(each);
			}
		}
		catch (SQLException ex) {
			throw new IllegalStateException("The temporary MariaDB at " + url("") + " refused: " + ex.getMessage(), ex);
		}
	}

	@Override
	public void close() {
		Process process = this.process;
		if (process != null) {
			// SIGTERM: the server shuts down cleanly.
			process.destroy();
			try {
				if (!process.waitFor(15, TimeUnit.SECONDS)) {
					process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
				}
			}
			catch (InterruptedException ex) {
				process.destroyForcibly();
				Thread.currentThread().interrupt();
			}
		}
		try {
			TemporaryPostgres.run(List.of("rm", "-rf", this.directory.toString()), false);
		}
		catch (RuntimeException ex) {
			// A temporary directory left behind is removed with the machine's.
		}
	}

	// The server refuses to run as root unless told to.
	private static List<String> asRoot() {
		return TemporaryPostgres.isRoot() ? List.of("--user=root") : List.of();
	}

	// A failure is unchecked, so that the caller closes the server it started.
	private void awaitAnswering() {
		Process process = this.process;
		try {
			Awaitility.await()
				.atMost(Duration.ofSeconds(30))
				.pollInterval(Duration.ofMillis(100))
				.until(() -> !process.isAlive() || answers());
		}
		catch (ConditionTimeoutException ex) {
			throw new IllegalStateException("MariaDB did not answer on 127.0.0.1:" + this.port + " within 30 s: "
					+ tail(this.directory.resolve("error.log")), ex);
		}
		if (!process.isAlive()) {
			throw new IllegalStateException(
					"MariaDB exited with " + process.exitValue() + ": " + tail(this.directory.resolve("error.log")));
		}
	}

	private boolean answers() {
		try (Connection connection = DriverManager.getConnection(url(""), "root", "")) {
			return true;
		}
		catch (SQLException ex) {
			return false;
		}
	}

	private static String tail(Path log) {
		try {
			List<String> lines = Files.readAllLines(log);
			return String.join("\n", lines.subList(Math.max(0, lines.size() - 10), lines.size()));
		}
		catch (IOException ex) {
			return "no " + log;
		}
	}

}
