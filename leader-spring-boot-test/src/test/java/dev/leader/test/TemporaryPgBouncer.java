package dev.leader.test;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;

/**
 * A PgBouncer of the test's own, from Debian's {@code pgbouncer} package, in a temporary
 * directory on a free loopback port, in front of a PostgreSQL server on loopback. Every
 * database of the server is reached under its own name, as {@code postgres} without a
 * password. As root, it runs as the {@code postgres} user. {@link #close()} stops it and
 * removes the directory.
 */
public final class TemporaryPgBouncer implements AutoCloseable {

	private static final Path BINARY = Path
		.of(System.getenv().getOrDefault("LEADER_TEST_PGBOUNCER", "/usr/sbin/pgbouncer"));

	private final Path directory;

	private final int port;

	private TemporaryPgBouncer(Path directory) throws IOException {
		this.directory = directory;
		this.port = TemporaryPostgres.freePort();
	}

	/**
	 * Starts a PgBouncer.
	 * @param serverPort the loopback port of the PostgreSQL server
	 * @param poolMode {@code session} or {@code transaction}
	 * @return the running PgBouncer
	 */
	public static TemporaryPgBouncer start(int serverPort, String poolMode) {
		if (!Files.isExecutable(BINARY)) {
			throw new IllegalStateException("This test runs the starter through PgBouncer and needs " + BINARY
					+ ": install Debian's pgbouncer package (apt-get install pgbouncer), or set LEADER_TEST_PGBOUNCER "
					+ "to the binary");
		}
		return TemporaryPostgres.startOrClose("Could not start a temporary PgBouncer",
				() -> new TemporaryPgBouncer(Files.createTempDirectory("leader-pgbouncer-")), (bouncer) -> {
					Path directory = bouncer.directory;
					Files.writeString(directory.resolve("users.txt"), "\"postgres\" \"\"\n");
					Files.writeString(directory.resolve("pgbouncer.ini"),
							String.join("\n", "[databases]", "* = host=127.0.0.1 port=" + serverPort, "[pgbouncer]",
									"listen_addr = 127.0.0.1", "listen_port = " + bouncer.port, "unix_socket_dir =",
									"auth_type = trust", "auth_file = " + directory.resolve("users.txt"),
									"pool_mode = " + poolMode, "max_client_conn = 200", "default_pool_size = 20",
									// pgjdbc sends extra_float_digits at login; PgBouncer
									// refuses parameters it does not know.
									"ignore_startup_parameters = extra_float_digits",
									"logfile = " + directory.resolve("pgbouncer.log"),
									"pidfile = " + directory.resolve("pgbouncer.pid"), ""));
					TemporaryPostgres.run(List.of("chmod", "-R", "a+rwX", directory.toString()), false);
					TemporaryPostgres.run(
							TemporaryPostgres.asPostgres(
									List.of(BINARY.toString(), "-d", directory.resolve("pgbouncer.ini").toString())),
							false);
					bouncer.awaitListening();
				}, TemporaryPgBouncer::close);
	}

	/**
	 * Returns a JDBC URL of a database through this PgBouncer.
	 * @param database the database
	 * @param parameters URL parameters, for example {@code prepareThreshold=0}, or empty
	 * @return the URL
	 */
	public String url(String database, String parameters) {
		return "jdbc:postgresql://127.0.0.1:" + this.port + "/" + database
				+ (parameters.isEmpty() ? "" : "?" + parameters);
	}

	@Override
	public void close() {
		Path pidFile = this.directory.resolve("pgbouncer.pid");
		try {
			if (Files.exists(pidFile)) {
				long pid = Long.parseLong(Files.readString(pidFile).trim());
				ProcessHandle.of(pid).ifPresent((process) -> {
					process.destroy();
					try {
						process.onExit().get(5, TimeUnit.SECONDS);
					}
					catch (Exception ex) {
						process.destroyForcibly();
					}
				});
			}
		}
		catch (IOException | RuntimeException ex) {
			// Removing the directory below still goes ahead.
		}
		try {
			TemporaryPostgres.run(List.of("rm", "-rf", this.directory.toString()), false);
		}
		catch (RuntimeException ex) {
			// A temporary directory left behind is removed with the machine's.
		}
	}

	private void awaitListening() {
		try {
			Awaitility.await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(50)).until(this::accepts);
		}
		catch (ConditionTimeoutException ex) {
			throw new IllegalStateException("PgBouncer did not listen on 127.0.0.1:" + this.port + " within 10 s; see "
					+ this.directory.resolve("pgbouncer.log"), ex);
		}
	}

	private boolean accepts() {
		try (Socket socket = new Socket()) {
			socket.connect(new InetSocketAddress("127.0.0.1", this.port), 200);
			return true;
		}
		catch (IOException ex) {
			return false;
		}
	}

}
