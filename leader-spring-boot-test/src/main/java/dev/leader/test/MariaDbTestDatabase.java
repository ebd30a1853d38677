package dev.leader.test;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.function.Consumer;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;

/**
 * A fresh MariaDB database for one test class, on the MariaDB server of the machine:
 * {@code LEADER_TEST_MARIADB_URL} (default {@code jdbc:mariadb://127.0.0.1:3306/}), with
 * {@code LEADER_TEST_MARIADB_USER} (default {@code root}) and
 * {@code LEADER_TEST_MARIADB_PASSWORD} (default empty). Where no server answers, creating
 * one fails with a message that says how to provide it: the MariaDB tests fail, they are
 * never skipped.
 */
public final class MariaDbTestDatabase {

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
	 * @throws IllegalStateException if no MariaDB server answers
	 */
	public static MariaDbTestDatabase create() {
		String server = envOr("LEADER_TEST_MARIADB_URL", "jdbc:mariadb://127.0.0.1:3306/");
		String user = envOr("LEADER_TEST_MARIADB_USER", "root");
		String password = envOr("LEADER_TEST_MARIADB_PASSWORD", "");
		String name = "t_" + UUID.randomUUID().toString().replace("-", "").substring(0, 16).toLowerCase(Locale.ROOT);
		try (Connection connection = DriverManager.getConnection(server, user, password);
				Statement statement = connection.createStatement()) {
			statement.execute("CREATE DATABASE " + name);
		}
		catch (SQLException ex) {
			throw new IllegalStateException("No MariaDB for the MariaDB tests at " + server + " (user " + user + "): "
					+ ex.getMessage() + ". Start the machine's MariaDB (`service mariadb start`; on a machine "
					+ "without it, `apt-get install mariadb-server` first, as .ci/run does), or point "
					+ "LEADER_TEST_MARIADB_URL, LEADER_TEST_MARIADB_USER and LEADER_TEST_MARIADB_PASSWORD at a MariaDB "
					+ "10.11 or later whose user may create databases", ex);
		}
		return new MariaDbTestDatabase(server, user, password, name);
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

}
