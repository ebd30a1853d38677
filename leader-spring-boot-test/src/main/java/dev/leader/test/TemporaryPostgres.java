package dev.leader.test;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;

/**
 * A PostgreSQL server of the test's own, from the binaries on the machine
 * ({@code initdb}, {@code pg_ctl}), in a temporary directory on a free loopback port, for
 * tests that stop, crash or reconfigure the server. PostgreSQL refuses to run as root, so
 * as root the binaries run as the {@code postgres} user. {@link #close()} stops the
 * server and removes the directory. A server can make streaming standbys of itself
 * ({@link #standbyOn}), which can stop streaming and be promoted;
 * {@link ReplicatedPostgres} keeps such a pair for a test.
 */
public final class TemporaryPostgres implements AutoCloseable {

	private static final Path BIN = Path
		.of(System.getenv().getOrDefault("LEADER_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"));

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
	 * Creates a cluster and starts it with its wall clock under libfaketime, offset by
	 * what a file of the server holds, read again at every clock reading: write
	 * {@code +30s} to {@link #clockOffsetFile()} and the server's clock steps 30 seconds
	 * forward at once. Its monotonic clock stays real.
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
	 * @param settings lines for {@code postgresql.conf}, for example
	 * {@code "synchronous_commit = off"}
	 * @return the running server
	 */
	public static TemporaryPostgres start(String... settings) {
		return start(List.of(settings), false);
	}

	/**
	 * Creates a cluster and starts it on the given loopback port, for a pair whose
	 * servers keep their ports across failovers, so that one multi-host URL leads to
	 * whichever is the primary.
	 * @param port a free port, see {@link #freePort()}
	 * @param settings lines for {@code postgresql.conf}
	 * @return the running server
	 */
	public static TemporaryPostgres startOn(int port, String... settings) {
		return start(List.of(settings), false, port);
	}

	private static TemporaryPostgres start(List<String> settings, boolean steppableClock) {
		try {
			return start(settings, steppableClock, freePort());
		}
		catch (IOException ex) {
			throw new IllegalStateException("Could not find a free port", ex);
		}
	}

	private static TemporaryPostgres start(List<String> settings, boolean steppableClock, int port) {
		if (!Files.isExecutable(BIN.resolve("initdb")) || !Files.isExecutable(BIN.resolve("pg_ctl"))) {
			throw new IllegalStateException("This test starts a PostgreSQL server of its own and needs initdb and "
					+ "pg_ctl in " + BIN + ": install Debian's postgresql-15 package (apt-get install postgresql-15), "
					+ "or set LEADER_TEST_PG_BIN to the directory that holds them");
		}
		return startOrClose("Could not create a temporary PostgreSQL server",
				() -> new TemporaryPostgres(prepareDirectory(), port), (server) -> {
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
				}, TemporaryPostgres::close);
	}

	/**
	 * Creates a streaming standby of this server with {@code pg_basebackup} and starts
	 * it.
	 * @return the running standby
	 */
	public TemporaryPostgres standby() {
		try {
			return standbyOn(freePort());
		}
		catch (IOException ex) {
			throw new IllegalStateException("Could not find a free port", ex);
		}
	}

	/**
	 * Creates a streaming standby of this server with {@code pg_basebackup} and starts it
	 * on the given port. It connects with {@code application_name} {@code standby}, and
	 * reconnects to a restarted primary within 200 ms
	 * ({@code wal_retrieve_retry_interval}, 5 s by default), and runs with
	 * {@code synchronous_standby_names} cleared in {@code postgresql.conf}; a value that
	 * the primary set with {@code ALTER SYSTEM} ({@link #replicateSynchronously}) comes
	 * along in {@code postgresql.auto.conf}, which wins, so clear it again once the
	 * standby is promoted.
	 * @param port a free port, see {@link #freePort()}
	 * @return the running standby
	 */
	public TemporaryPostgres standbyOn(int port) {
		return startOrClose("Could not create a temporary standby",
				() -> new TemporaryPostgres(prepareDirectory(), port), (standby) -> {
					pg("pg_basebackup", "-h", "127.0.0.1", "-p", Integer.toString(this.port), "-U", "postgres", "-D",
							standby.data.toString(), "-R", "-X", "stream", "--no-sync", "-d",
							"application_name=standby");
					standby
						.configure(List.of("synchronous_standby_names = ''", "wal_retrieve_retry_interval = '200ms'"));
					standby.startServer();
				}, TemporaryPostgres::close);
	}

	/**
	 * Promotes this standby to a primary, which starts a new timeline, and waits until it
	 * accepts writes.
	 */
	public void promote() {
		pg("pg_ctl", "-D", this.data.toString(), "-w", "-t", "60", "promote");
	}

	/**
	 * Makes this standby stop streaming from its primary, as a standby that fell behind
	 * or lost its network does: it stays up and readable, and whatever the primary
	 * commits from now on is missing from it. Waits until its WAL receiver has stopped.
	 */
	public void stopStreaming() {
		execute("ALTER SYSTEM SET primary_conninfo = ''", "SELECT pg_reload_conf()");
		awaitQuery("SELECT NOT EXISTS (SELECT 1 FROM pg_stat_wal_receiver)", "the WAL receiver to stop");
	}

	/**
	 * Makes commits on this primary wait for a standby's flush
	 * ({@code synchronous_standby_names = '*'}), or no longer, and waits until a standby
	 * streams synchronously.
	 * @param synchronous whether commits wait for the standby
	 */
	public void replicateSynchronously(boolean synchronous) {
		execute("ALTER SYSTEM SET synchronous_standby_names = '" + (synchronous ? "*" : "") + "'",
				"SELECT pg_reload_conf()");
		awaitQuery(
				synchronous ? "SELECT EXISTS (SELECT 1 FROM pg_stat_replication WHERE sync_state = 'sync')"
						: "SELECT current_setting('synchronous_standby_names') = ''",
				"synchronous replication to be " + (synchronous ? "on" : "off"));
	}

	/**
	 * Waits until a standby streams from this primary.
	 */
	public void awaitStandbyStreaming() {
		awaitQuery("SELECT EXISTS (SELECT 1 FROM pg_stat_replication WHERE state = 'streaming')",
				"a standby to stream");
	}

	/**
	 * Returns the timeline this primary writes WAL on.
	 * @return the timeline, 1 until the first promotion
	 */
	public long timeline() {
		try (Connection connection = connect();
				Statement statement = connection.createStatement();
				ResultSet row = statement.executeQuery(
						"SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint")) {
			row.next();
			return row.getLong(1);
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not read the timeline of " + url(), ex);
		}
	}

	/**
	 * Returns the port.
	 * @return the port
	 */
	public int port() {
		return this.port;
	}

	private void execute(String... statements) {
		try (Connection connection = connect(); Statement statement = connection.createStatement()) {
			for (String sql : statements) {
				statement.execute(sql);
			}
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not run " + List.of(statements) + " on " + url(), ex);
		}
	}

	private void awaitQuery(String condition, String what) {
		try {
			Awaitility.await(what).atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20)).until(() -> {
				try (Connection connection = connect();
						Statement statement = connection.createStatement();
						ResultSet row = statement.executeQuery(condition)) {
					return row.next() && row.getBoolean(1);
				}
			});
		}
		catch (ConditionTimeoutException ex) {
			throw new IllegalStateException("Timed out waiting for " + what + " on " + url(), ex);
		}
	}

	/**
	 * Returns the file that holds the offset of a server started with
	 * {@link #startWithSteppableClock}.
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
	 * Stops the server the way PostgreSQL does in the mode given: {@code immediate} is a
	 * crash (no checkpoint, WAL not yet flushed is lost), {@code fast} a clean shutdown.
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
		command
			.addAll(List.of(command.isEmpty() ? "pg_ctl" : BIN.resolve("pg_ctl").toString(), "-D", this.data.toString(),
					"-l", this.directory.resolve("server.log").toString(), "-w", "-t", "60", "start"));
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
	 * Runs one of the PostgreSQL binaries, as {@code postgres} when the tests run as
	 * root.
	 * @param command the binary's name, or {@code env} and the environment before the
	 * binary's full path, then its arguments
	 */
	private void pg(String... command) {
		List<String> line = new ArrayList<>();
		line.add(command[0].equals("env") ? "env" : BIN.resolve(command[0]).toString());
		line.addAll(List.of(command).subList(1, command.length));
		run(asPostgres(line), true);
	}

	/**
	 * Returns a command that runs as {@code postgres} when the tests run as root.
	 * @param command the command and its arguments
	 * @return the command to run
	 */
	static List<String> asPostgres(List<String> command) {
		List<String> line = new ArrayList<>();
		if (isRoot()) {
			line.addAll(List.of("runuser", "-u", "postgres", "--"));
		}
		line.addAll(command);
		return line;
	}

	/**
	 * Creates a server and starts it, closing it again if starting fails.
	 * @param <T> the server's type
	 * @param failure the message if creating or starting it fails on I/O
	 * @param create creates the server
	 * @param start starts the created server
	 * @param close closes a server that did not start
	 * @return the running server
	 */
	static <T> T startOrClose(String failure, IoSupplier<T> create, IoConsumer<T> start, Consumer<T> close) {
		try {
			T server = create.get();
			try {
				start.accept(server);
				return server;
			}
			catch (RuntimeException ex) {
				close.accept(server);
				throw ex;
			}
		}
		catch (IOException ex) {
			throw new IllegalStateException(failure, ex);
		}
	}

	/**
	 * Runs a command and waits for it, failing with its output unless it exits with 0.
	 * @param command the command and its arguments
	 * @param inTemp whether to run it in {@code /tmp}, where the {@code postgres} user
	 * may read the working directory
	 */
	static void run(List<String> command, boolean inTemp) {
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

	static boolean isRoot() {
		return "root".equals(System.getProperty("user.name"));
	}

	/**
	 * Returns a loopback port that is free now.
	 * @return the port
	 * @throws IOException if no port can be found
	 */
	public static int freePort() throws IOException {
		try (ServerSocket socket = new ServerSocket(0)) {
			return socket.getLocalPort();
		}
	}

	/**
	 * Creates something, or fails on I/O.
	 *
	 * @param <T> what it creates
	 */
	@FunctionalInterface
	interface IoSupplier<T> {

		T get() throws IOException;

	}

	/**
	 * Does something with a value, or fails on I/O.
	 *
	 * @param <T> the value's type
	 */
	@FunctionalInterface
	interface IoConsumer<T> {

		void accept(T value) throws IOException;

	}

}
