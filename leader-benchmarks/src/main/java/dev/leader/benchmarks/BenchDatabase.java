package dev.leader.benchmarks;

import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HexFormat;
import java.util.List;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leader.jdbc.LeaderSchemaMigration;
import dev.leader.jdbc.TablePrefix;
import org.jspecify.annotations.Nullable;

/**
 * A database of the benchmarks' own, on PostgreSQL or MariaDB ({@link Dialect}), so that
 * the server's counters count the benchmarked nodes and nothing else: created (dropped
 * first if left over) on start, dropped on {@link #close()}. The monitoring queries
 * ({@link #statistics()}, {@link #serverLog()}) run on the server's maintenance database,
 * never on this one.
 * <p>
 * On PostgreSQL the nodes connect as the harness's user, and {@code pg_stat_database}
 * counts the database's transactions. MariaDB counts nothing per database, so there the
 * nodes connect as a user of the database's own, created with it and dropped with it, and
 * the harness reads that user's counters in {@code information_schema.USER_STATISTICS}
 * (turned on with {@code userstat} for the run, and back off after if it was off); the
 * harness's own queries run as the harness's user, and do not count.
 */
final class BenchDatabase implements AutoCloseable {

	static final TablePrefix PREFIX = new TablePrefix("leader_");

	/**
	 * The hosts of the MariaDB user of the database's own: any over TCP, and the local
	 * socket.
	 */
	private static final List<String> MARIADB_HOSTS = List.of("%", "localhost");

	private final MaintenanceDatabase maintenance;

	private final Dialect dialect;

	private final String name;

	private final String user;

	private final String password;

	private final @Nullable String serverLogPath;

	private boolean userStatisticsWereOff;

	private BenchDatabase(MaintenanceDatabase maintenance, String name, @Nullable String serverLog) {
		this.maintenance = maintenance;
		this.dialect = maintenance.dialect();
		this.name = name;
		boolean ownUser = this.dialect == Dialect.MARIADB;
		this.user = ownUser ? name : maintenance.user();
		this.password = ownUser ? newPassword() : maintenance.password();
		this.serverLogPath = serverLog;
	}

	private static String newPassword() {
		byte[] secret = new byte[12];
		new SecureRandom().nextBytes(secret);
		return HexFormat.of().formatHex(secret);
	}

	/**
	 * Creates the database on the server of the given URL, and runs the starter's
	 * migrations in it.
	 * @param serverUrl the JDBC URL of the server's maintenance database
	 * @param user the user
	 * @param password the user's password
	 * @param name the name of the database
	 * @param serverLog the path of the server's log file, or {@code null} to ask the
	 * server
	 * @return the database, migrated
	 */
	static BenchDatabase create(String serverUrl, String user, String password, String name, @Nullable String serverLog)
			throws SQLException {
		BenchDatabase database = createEmpty(serverUrl, user, password, name, serverLog);
		try (HikariDataSource dataSource = database.dataSource("bench-migrate", 2)) {
			new LeaderSchemaMigration(dataSource, PREFIX).migrate();
		}
		return database;
	}

	/**
	 * Creates the database on the server of the given URL, empty, for applications that
	 * run their own migrations.
	 * @param serverUrl the JDBC URL of the server's maintenance database
	 * @param user the user
	 * @param password the user's password
	 * @param name the name of the database
	 * @param serverLog the path of the server's log file, or {@code null} to ask the
	 * server
	 * @return the database, empty
	 */
	static BenchDatabase createEmpty(String serverUrl, String user, String password, String name,
			@Nullable String serverLog) throws SQLException {
		BenchDatabase database = new BenchDatabase(new MaintenanceDatabase(serverUrl, user, password), name, serverLog);
		try (Connection connection = database.maintenance.connect();
				Statement statement = connection.createStatement()) {
			if (database.dialect == Dialect.POSTGRESQL) {
				statement.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
				statement.execute("CREATE DATABASE " + name);
			}
			else {
				statement.execute("DROP DATABASE IF EXISTS " + name);
				statement.execute("CREATE DATABASE " + name);
				for (String host : MARIADB_HOSTS) {
					statement.execute("DROP USER IF EXISTS '" + name + "'@'" + host + "'");
					statement
						.execute("CREATE USER '" + name + "'@'" + host + "' IDENTIFIED BY '" + database.password + "'");
					statement.execute("GRANT ALL ON " + name + ".* TO '" + name + "'@'" + host + "'");
				}
				try (ResultSet row = statement.executeQuery("SELECT @@global.userstat")) {
					row.next();
					database.userStatisticsWereOff = !row.getBoolean(1);
				}
				statement.execute("SET GLOBAL userstat = 1");
			}
		}
		return database;
	}

	Dialect dialect() {
		return this.dialect;
	}

	String name() {
		return this.name;
	}

	/**
	 * Returns the JDBC URL of this database: the server's URL with this database's name
	 * in place of the maintenance database's, its parameters kept.
	 * @return the URL
	 */
	String url() {
		return this.maintenance.urlOf(this.name);
	}

	/**
	 * Returns the nodes' user: the harness's on PostgreSQL, the database's own on
	 * MariaDB.
	 * @return the user
	 */
	String user() {
		return this.user;
	}

	String password() {
		return this.password;
	}

	/**
	 * Returns the server's log, for this database's lines in it.
	 * @return the log
	 */
	ServerLog serverLog() {
		return new ServerLog(this.maintenance, this.name, this.serverLogPath);
	}

	/**
	 * Returns the server's counters and sessions of this database.
	 * @return the statistics
	 */
	ServerStatistics statistics() {
		return new ServerStatistics(this.maintenance, this.name, this.user);
	}

	/**
	 * Opens a connection to the benchmarks' database, for the harness's own queries.
	 * @return the connection
	 */
	Connection connect() throws SQLException {
		return DriverManager.getConnection(url(), this.maintenance.user(), this.maintenance.password());
	}

	HikariDataSource dataSource(String poolName, int size) {
		HikariConfig config = new HikariConfig();
		config.setPoolName(poolName);
		config.setJdbcUrl(url());
		config.setUsername(this.user);
		config.setPassword(this.password);
		config.setMaximumPoolSize(size);
		config.setMinimumIdle(1);
		config.setConnectionTimeout(3000);
		return new HikariDataSource(config);
	}

	/**
	 * Empties the starter's tables between two benchmarks.
	 */
	void reset() throws SQLException {
		try (Connection connection = connect(); Statement statement = connection.createStatement()) {
			if (this.dialect == Dialect.POSTGRESQL) {
				statement.execute("TRUNCATE " + PREFIX.value() + "leases, " + PREFIX.value() + "nodes, "
						+ PREFIX.value() + "fences");
			}
			else {
				for (String table : List.of("leases", "lease_terms", "log_heads", "nodes", "fences")) {
					statement.execute("DELETE FROM " + PREFIX.value() + table);
				}
			}
		}
	}

	/**
	 * Empties the starter's tables, and on PostgreSQL finishes the checkpoint that the
	 * writes of earlier benchmarks started, so that its disk writes do not slow down
	 * whichever benchmark runs first after them. Without the right to checkpoint (a
	 * superuser, or {@code pg_checkpoint}), only empties the tables, and says so. MariaDB
	 * has no statement that waits for InnoDB's flushing, so there it only empties them.
	 */
	void settle() throws SQLException {
		reset();
		if (this.dialect != Dialect.POSTGRESQL) {
			return;
		}
		try (Connection connection = this.maintenance.connect(); Statement statement = connection.createStatement()) {
			statement.execute("CHECKPOINT");
		}
		catch (SQLException ex) {
			System.out.println("NOTE no CHECKPOINT before the next benchmark: " + ex.getMessage());
		}
	}

	@Override
	public void close() throws SQLException {
		try (Connection connection = this.maintenance.connect(); Statement statement = connection.createStatement()) {
			if (this.dialect == Dialect.POSTGRESQL) {
				statement.execute("DROP DATABASE IF EXISTS " + this.name + " WITH (FORCE)");
				return;
			}
			statement.execute("DROP DATABASE IF EXISTS " + this.name);
			for (String host : MARIADB_HOSTS) {
				statement.execute("DROP USER IF EXISTS '" + this.name + "'@'" + host + "'");
			}
			if (this.userStatisticsWereOff) {
				statement.execute("SET GLOBAL userstat = 0");
			}
		}
	}

}
