package dev.leader.test;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A PostgreSQL server of the test's own, from the binaries on the machine ({@code initdb}, {@code pg_ctl}), in a
 * temporary directory on a free loopback port, for tests that stop, crash or reconfigure the server. PostgreSQL
 * refuses to run as root, so as root the binaries run as the {@code postgres} user. {@link #close()} stops the
 * server and removes the directory.
 */
public final class TemporaryPostgres implements AutoCloseable {

	private static final Path BIN = Path.of(System.getenv().getOrDefault("LEADER_TEST_PG_BIN",
			"/usr/lib/postgresql/15/bin"));

	private final Path directory;

	private final Path data;

	private static final Path LIBFAKETIME = Path.of("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1");

	private final int port;

	private final List<String> environment = new ArrayList<>();

	private TemporaryPostgres(Path directory, int port) {
		this.directory = directory;
		this.data = directory.resolve("data");
		this.port = port;
	}

	/**
	 * Creates a cluster and starts it with its wall clock under libfaketime, offset by what a file of the server
	 * holds, read again at every clock reading: write {@code +30s} to {@link #clockOffsetFile()} and the server's
	 * clock steps 30 seconds forward at once. Its monotonic clock stays real.
	 * @param settings lines for {@code postgresql.conf}
	 * @return the running server
	 */
	public static TemporaryPostgres startWithSteppableClock(String... settings) {
		if (!Files.isReadable(LIBFAKETIME)) {
			throw new IllegalStateException("This test steps a PostgreSQL server's clock with libfaketime ("
					+ LIBFAKETIME + "): install Debian's faketime package (apt-get install faketime)");
		}
		return start(List.of(settings), true);
	}

	/**
	 * Creates a cluster and starts it.
	 * @param settings lines for {@code postgresql.conf}, for example {@code "synchronous_commit = off"}
	 * @return the running server
	 */
	public static TemporaryPostgres start(String... settings) {
		return start(List.of(settings), false);
	}

	private static TemporaryPostgres start(List<String> settings, boolean steppableClock) {
		if (!Files.isExecutable(BIN.resolve("initdb")) || !Files.isExecutable(BIN.resolve("pg_ctl"))) {
			throw new IllegalStateException("This test starts a PostgreSQL server of its own and needs initdb and "
					+ "pg_ctl in " + BIN + ": install Debian's postgresql-15 package (apt-get install postgresql-15), "
					+ "or set LEADER_TEST_PG_BIN to the directory that holds them");
		}
		try {
			TemporaryPostgres server = new TemporaryPostgres(prepareDirectory(), freePort());
			try {
				server.pg("initdb", "-D", server.data.toString(), "-A", "trust", "-U", "postgres", "--no-sync");
				server.configure(settings);
				if (steppableClock) {
					Files.writeString(server.clockOffsetFile(), "+0\n");
					run(List.of("chmod", "666", server.clockOffsetFile().toString()), false);
					server.environment.addAll(List.of("LD_PRELOAD=" + LIBFAKETIME,
							"FAKETIME_TIMESTAMP_FILE=" + server.clockOffsetFile(), "FAKETIME_NO_CACHE=1",
							"FAKETIME_DONT_FAKE_MONOTONIC=1", "FAKETIME_FORCE_MONOTONIC_FIX=0"));
				}
				server.startServer();
				return server;
			}
			catch (RuntimeException ex) {
				server.close();
				throw ex;
			}
		}
		catch (IOException ex) {
			throw new IllegalStateException("Could not create a temporary PostgreSQL server", ex);
		}
	}

	/**
	 * Creates a streaming standby of this server with {@code pg_basebackup} and starts it.
	 * @return the running standby
	 */
	public TemporaryPostgres standby() {
		try {
			TemporaryPostgres standby = new TemporaryPostgres(prepareDirectory(), freePort());
			try {
				pg("pg_basebackup", "-h", "127.0.0.1", "-p", Integer.toString(this.port), "-U", "postgres", "-D",
						standby.data.toString(), "-R", "-X", "stream", "--no-sync");
				standby.configure(List.of());
				standby.startServer();
				return standby;
			}
			catch (RuntimeException ex) {
				standby.close();
				throw ex;
			}
		}
		catch (IOException ex) {
			throw new IllegalStateException("Could not create a temporary standby", ex);
		}
	}

	/**
	 * Returns the file that holds the offset of a server started with {@link #startWithSteppableClock}.
	 * @return the file
	 */
	public Path clockOffsetFile() {
		return this.directory.resolve("clock-offset");
	}

	/**
	 * Returns the JDBC URL of the {@code postgres} database.
	 * @return the URL
	 */
	public String url() {
		return "jdbc:postgresql://127.0.0.1:" + this.port + "/postgres";
	}

	/**
	 * Opens a connection as {@code postgres}, outside of any pool.
	 * @return the connection
	 * @throws SQLException if the server cannot be reached
	 */
	public Connection connect() throws SQLException {
		return DriverManager.getConnection(url(), "postgres", "");
	}

	/**
	 * Stops the server the way PostgreSQL does in the mode given: {@code immediate} is a crash (no checkpoint, WAL
	 * not yet flushed is lost), {@code fast} a clean shutdown.
	 * @param mode {@code fast} or {@code immediate}
	 */
	public void stop(String mode) {
		pg("pg_ctl", "-D", this.data.toString(), "-m", mode, "-w", "stop");
	}

	/**
	 * Starts the stopped server again, which replays its WAL after a crash.
	 */
	public void startServer() {
		List<String> command = new ArrayList<>();
		if (!this.environment.isEmpty()) {
			command.add("env");
			command.addAll(this.environment);
		}
		command.addAll(List.of(command.isEmpty() ? "pg_ctl" : BIN.resolve("pg_ctl").toString(), "-D",
				this.data.toString(), "-l",
				this.directory.resolve("server.log").toString(), "-w", "-t", "60", "start"));
		pg(command.toArray(String[]::new));
	}

	@Override
	public void close() {
		try {
			if (Files.exists(this.data.resolve("postmaster.pid"))) {
				stop("immediate");
			}
		}
		catch (RuntimeException ex) {
			// Removing the directory below ends a server that would not stop.
		}
		try {
			run(List.of("rm", "-rf", this.directory.toString()), false);
		}
		catch (RuntimeException ex) {
			// A temporary directory left behind is removed with the machine's.
		}
	}

	private static Path prepareDirectory() throws IOException {
		Path directory = Files.createTempDirectory("leader-pg-");
		run(List.of("chmod", "755", directory.toString()), false);
		if (isRoot()) {
			run(List.of("chown", "postgres:postgres", directory.toString()), false);
		}
		return directory;
	}

	private void configure(List<String> settings) throws IOException {
		List<String> conf = new ArrayList<>(List.of("port = " + this.port, "listen_addresses = '127.0.0.1'",
				"unix_socket_directories = '" + this.directory + "'", "max_connections = 50"));
		conf.addAll(settings);
		Files.writeString(this.data.resolve("postgresql.conf"), "\n" + String.join("\n", conf) + "\n",
				StandardOpenOption.APPEND);
	}

	/**
	 * Runs one of the PostgreSQL binaries, as {@code postgres} when the tests run as root.
	 */
	private void pg(String... command) {
		List<String> line = new ArrayList<>();
		if (isRoot()) {
			line.addAll(List.of("runuser", "-u", "postgres", "--"));
		}
		line.add(command[0].equals("env") ? "env" : BIN.resolve(command[0]).toString());
		line.addAll(List.of(command).subList(1, command.length));
		run(line, true);
	}

	private static void run(List<String> command, boolean inTemp) {
		try {
			ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
			if (inTemp) {
				builder.directory(Path.of("/tmp").toFile());
			}
			Process process = builder.start();
			String output = new String(process.getInputStream().readAllBytes());
			if (!process.waitFor(120, TimeUnit.SECONDS)) {
				process.destroyForcibly();
				throw new IllegalStateException("Timed out: " + command);
			}
			if (process.exitValue() != 0) {
				throw new IllegalStateException("Failed (" + process.exitValue() + "): " + command + "\n" + output);
			}
		}
		catch (IOException ex) {
			throw new IllegalStateException("Could not run " + command, ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted: " + command, ex);
		}
	}

	private static boolean isRoot() {
		return "root".equals(System.getProperty("user.name"));
	}

	private static int freePort() throws IOException {
		try (ServerSocket socket = new ServerSocket(0)) {
			return socket.getLocalPort();
		}
	}

}
