package dev.leader.embedded;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/**
 * A real PostgreSQL server run by this JVM from binaries shipped in a jar, listening on a
 * loopback port, with its data in a directory that survives restarts. Other processes on
 * the machine can use {@link #jdbcUrl()} as long as the server runs: user
 * {@code postgres}, no password, database {@code postgres}.
 * <p>
 * PostgreSQL refuses to run as root; as root, the server runs in a user namespace
 * ({@code unshare -U}), where it is an unprivileged user. {@link #close()} stops the
 * server and keeps its data. A server left running by a JVM that was killed is stopped
 * before a new one starts on the same directory; one whose application still runs is not,
 * and the new one fails to start.
 */
public final class EmbeddedPostgresServer implements AutoCloseable {

	private static final Log logger = LogFactory.getLog(EmbeddedPostgresServer.class);

	private static final String HOST = "127.0.0.1";

	private static final Duration STARTUP_WAIT = Duration.ofSeconds(60);

	private static final String LIBRARY_LOCK_FILE = "epg-lock";

	private static final Set<Path> RUNNING_HERE = ConcurrentHashMap.newKeySet();

	private final EmbeddedPostgres postgres;

	private final Path dataDirectory;

	private EmbeddedPostgresServer(EmbeddedPostgres postgres, Path dataDirectory) {
		this.postgres = postgres;
		this.dataDirectory = dataDirectory;
	}

	/**
	 * Starts a server on the data directory, creating the cluster the first time, and
	 * waits until it accepts connections.
	 * @param dataDirectory where the server keeps its data; created when missing
	 * @param port the loopback port, or {@code 0} for a free one
	 * @return the running server
	 * @throws IllegalStateException if the server does not start, for example because
	 * another process uses the directory or the port
	 */
	public static EmbeddedPostgresServer start(Path dataDirectory, int port) {
		Path directory = dataDirectory.toAbsolutePath().normalize();
		try {
			Files.createDirectories(directory);
			stopOrphanedServer(directory);
			EmbeddedPostgres postgres = EmbeddedPostgres.builder()
				.setDataDirectory(directory)
				.setCleanDataDirectory(false)
				.setPort(port)
				// Stopped with the application context; a JVM hook could stop it while
				// the context still uses it.
				.setRegisterShutdownHook(false)
				.setPGStartupWait(STARTUP_WAIT)
				.setServerConfig("listen_addresses", HOST)
				// The library's test-friendly defaults lose committed data in a crash;
				// this server keeps data.
				.setServerConfig("synchronous_commit", "on")
				.setServerConfig("fsync", "on")
				.start();
			RUNNING_HERE.add(directory);
			return new EmbeddedPostgresServer(postgres, directory);
		}
		catch (IOException | RuntimeException ex) {
			throw new IllegalStateException("Could not start the embedded PostgreSQL server on data directory "
					+ directory + ((port != 0) ? " and port " + port : "") + ": " + ex.getMessage()
					+ ". Stop the process that uses them, or set leader.embedded-postgres.data-directory and "
					+ "leader.embedded-postgres.port to others", ex);
		}
	}

	/**
	 * Returns the JDBC URL of the {@code postgres} database, on the loopback address.
	 * @return the URL, without credentials
	 */
	public String jdbcUrl() {
		return "jdbc:postgresql://" + HOST + ":" + port() + "/postgres";
	}

	/**
	 * Returns the user that the URL's connections log in as, without a password.
	 * @return {@code postgres}
	 */
	public String username() {
		return "postgres";
	}

	/**
	 * Returns the loopback port the server listens on.
	 * @return the port
	 */
	public int port() {
		return this.postgres.getPort();
	}

	/**
	 * Returns the directory that holds the server's data.
	 * @return the absolute path
	 */
	public Path dataDirectory() {
		return this.dataDirectory;
	}

	/**
	 * Stops the server (fast shutdown: open sessions are ended) and keeps its data.
	 * Calling it again does nothing.
	 */
	@Override
	public void close() {
		try {
			this.postgres.close();
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		finally {
			RUNNING_HERE.remove(this.dataDirectory);
		}
	}

	// postmaster.pid's first line is the server's pid. A server whose JVM was killed
	// keeps running and would make pg_ctl refuse to start a second one on its directory.
	private static void stopOrphanedServer(Path directory) throws IOException {
		Path pidFile = directory.resolve("postmaster.pid");
		if (!Files.isReadable(pidFile)) {
			return;
		}
		if (heldByARunningApplication(directory)) {
			throw new IllegalStateException("Another application's embedded PostgreSQL server runs on " + directory);
		}
		List<String> lines = Files.readAllLines(pidFile);
		Optional<ProcessHandle> server = lines.isEmpty() ? Optional.empty() : parsePid(lines.get(0))
			.flatMap(ProcessHandle::of)
			.filter(ProcessHandle::isAlive)
			.filter((
					process) -> process.info().command().map((command) -> command.endsWith("/postgres")).orElse(false));
		if (server.isEmpty()) {
			return;
		}
		logger.warn("Stopping the PostgreSQL server (pid " + server.get().pid() + ") left running on " + directory
				+ " by an earlier application");
		// SIGTERM is PostgreSQL's smart shutdown; the sessions of the dead JVM are gone
		// already.
		server.get().destroy();
		try {
			server.get().onExit().get(30, TimeUnit.SECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted while stopping the orphaned PostgreSQL server", ex);
		}
		catch (Exception ex) {
			throw new IllegalStateException("The PostgreSQL server (pid " + server.get().pid() + ") left running on "
					+ directory + " did not stop within 30 s; stop it and start again", ex);
		}
	}

	// The library locks this file for as long as its server runs, and the lock goes with
	// the process that took it: a server whose application still runs is no orphan, and
	// stopping it would pull the database from under that application.
	private static boolean heldByARunningApplication(Path directory) throws IOException {
		Path lockFile = directory.resolve(LIBRARY_LOCK_FILE);
		if (!Files.exists(lockFile)) {
			return false;
		}
		// Not tried for a server of this JVM: closing any channel on the file would drop
		// that server's lock.
		if (RUNNING_HERE.contains(directory)) {
			return true;
		}
		try (FileChannel channel = FileChannel.open(lockFile, StandardOpenOption.WRITE);
				FileLock lock = channel.tryLock()) {
			return lock == null;
		}
		catch (OverlappingFileLockException ex) {
			return true;
		}
	}

	private static Optional<Long> parsePid(String line) {
		try {
			return Optional.of(Long.parseLong(line.trim()));
		}
		catch (NumberFormatException ex) {
			return Optional.empty();
		}
	}

	@Override
	public String toString() {
		return "EmbeddedPostgresServer[" + jdbcUrl() + ", " + this.dataDirectory + "]";
	}

}
