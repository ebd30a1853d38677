package dev.leader.benchmarks;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leader.jdbc.LeaderSchemaMigration;
import dev.leader.jdbc.TablePrefix;
import org.jspecify.annotations.Nullable;

/**
 * A PostgreSQL database of the benchmarks' own, so that {@code pg_stat_database} and the
 * server log count the benchmarked nodes and nothing else: created (dropped first if left
 * over) on start, dropped on {@link #close()}. The monitoring queries run on the server's
 * maintenance database, never on this one.
 */
final class BenchDatabase implements AutoCloseable {

	static final TablePrefix PREFIX = new TablePrefix("leader_");

	private final String serverUrl;

	private final String user;

	private final String password;

	private final String name;

	private final @Nullable String serverLog;

	private BenchDatabase(String serverUrl, String user, String password, String name, @Nullable String serverLog) {
		this.serverUrl = serverUrl;
		this.user = user;
		this.password = password;
		this.name = name;
		this.serverLog = serverLog;
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
		BenchDatabase database = new BenchDatabase(serverUrl, user, password, name, serverLog);
		try (Connection connection = database.maintenance(); Statement statement = connection.createStatement()) {
			statement.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
			statement.execute("CREATE DATABASE " + name);
		}
		return database;
	}

	/**
	 * Makes the server log every statement of this database's new sessions with its
	 * duration ({@code log_min_duration_statement = 0}), empty queries included, so that
	 * {@link #serverLogSince(long)} can list them. Needs a superuser.
	 * @return whether the setting was made
	 */
	boolean logStatements() {
		try (Connection connection = maintenance(); Statement statement = connection.createStatement()) {
			statement.execute("ALTER DATABASE " + this.name + " SET log_min_duration_statement = 0");
			return true;
		}
		catch (SQLException ex) {
			System.out.println("NOTE statements of " + this.name + " not logged: " + ex.getMessage());
			return false;
		}
	}

	/**
	 * Returns what the server wrote to its log after the given size.
	 * @param fromSize a size returned by {@link #serverLogSize()}
	 * @return the text, or {@code null} if the log cannot be read
	 */
	@Nullable String serverLogSince(long fromSize) {
		String log = serverLog();
		if (log == null || fromSize < 0) {
			return null;
		}
		try (Connection connection = maintenance();
				PreparedStatement statement = connection.prepareStatement(
						"SELECT pg_read_file(?, ?, greatest((SELECT size FROM pg_stat_file(?)) - ?, 0))")) {
			statement.setString(1, log);
			statement.setLong(2, fromSize);
			statement.setString(3, log);
			statement.setLong(4, fromSize);
			try (ResultSet row = statement.executeQuery()) {
				row.next();
				return row.getString(1);
			}
		}
		catch (SQLException ex) {
			return null;
		}
	}

	String url() {
		int slash = this.serverUrl.indexOf('/', "jdbc:postgresql://".length());
		int query = this.serverUrl.indexOf('?');
		String base = this.serverUrl.substring(0, slash + 1) + this.name;
		return (query >= 0) ? base + this.serverUrl.substring(query) : base;
	}

	String user() {
		return this.user;
	}

	String password() {
		return this.password;
	}

	String name() {
		return this.name;
	}

	/**
	 * Opens a connection to the benchmarks' database, for the harness's own queries.
	 * @return the connection
	 */
	Connection connect() throws SQLException {
		return DriverManager.getConnection(url(), this.user, this.password);
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
			statement.execute(
					"TRUNCATE " + PREFIX.value() + "leases, " + PREFIX.value() + "nodes, " + PREFIX.value() + "fences");
		}
	}

	/**
	 * Empties the starter's tables, and finishes the checkpoint that the writes of
	 * earlier benchmarks started, so that its disk writes do not slow down whichever
	 * benchmark runs first after them. Without the right to checkpoint (a superuser, or
	 * {@code pg_checkpoint}), only empties the tables, and says so.
	 */
	void settle() throws SQLException {
		reset();
		try (Connection connection = maintenance(); Statement statement = connection.createStatement()) {
			statement.execute("CHECKPOINT");
		}
		catch (SQLException ex) {
			System.out.println("NOTE no CHECKPOINT before the next benchmark: " + ex.getMessage());
		}
	}

	/**
	 * Reads the database's transaction counters, committed plus rolled back, and rolled
	 * back alone.
	 * @return the committed plus rolled back count, then the rolled back count
	 */
	long[] transactions() throws SQLException {
		try (Connection connection = maintenance();
				PreparedStatement statement = connection.prepareStatement(
						"SELECT xact_commit + xact_rollback, xact_rollback FROM pg_stat_database WHERE datname = ?")) {
			statement.setString(1, this.name);
			try (ResultSet row = statement.executeQuery()) {
				row.next();
				return new long[] { row.getLong(1), row.getLong(2) };
			}
		}
	}

	/**
	 * Returns the size of the server log, to count the lines written after it with
	 * {@link #errorLines(long)}.
	 * @return the size, or -1 if the log cannot be read
	 */
	long serverLogSize() {
		String log = serverLog();
		if (log == null) {
			return -1;
		}
		try (Connection connection = maintenance();
				PreparedStatement statement = connection.prepareStatement("SELECT size FROM pg_stat_file(?)")) {
			statement.setString(1, log);
			try (ResultSet row = statement.executeQuery()) {
				row.next();
				return row.getLong(1);
			}
		}
		catch (SQLException ex) {
			return -1;
		}
	}

	/**
	 * Counts the ERROR, FATAL and PANIC lines of this database written to the server log
	 * after the given size.
	 * @param fromSize the size of the log to count after, in bytes
	 * @return the count, or -1 if the log cannot be read
	 */
	long errorLines(long fromSize) {
		String log = serverLog();
		if (log == null || fromSize < 0) {
			return -1;
		}
		try (Connection connection = maintenance(); PreparedStatement statement = connection.prepareStatement("""
				SELECT count(*) FROM regexp_split_to_table(
				  pg_read_file(?, ?, greatest((SELECT size FROM pg_stat_file(?)) - ?, 0)), E'\\n') AS line
				WHERE line LIKE ? AND line ~ '(ERROR|FATAL|PANIC):'
				""")) {
			statement.setString(1, log);
			statement.setLong(2, fromSize);
			statement.setString(3, log);
			statement.setLong(4, fromSize);
			statement.setString(5, "%@" + this.name + " %");
			try (ResultSet row = statement.executeQuery()) {
				row.next();
				return row.getLong(1);
			}
		}
		catch (SQLException ex) {
			return -1;
		}
	}

	/**
	 * Returns the {@code application_name} of every session of this database, by backend
	 * process id, read from the maintenance database so that the reading adds nothing to
	 * this one.
	 * @return the application name of each session, by backend process id
	 */
	Map<Integer, String> applicationNames() throws SQLException {
		Map<Integer, String> names = new HashMap<>();
		try (Connection connection = maintenance();
				PreparedStatement statement = connection
					.prepareStatement("SELECT pid, application_name FROM pg_stat_activity WHERE datname = ?")) {
			statement.setString(1, this.name);
			try (ResultSet rows = statement.executeQuery()) {
				while (rows.next()) {
					names.put(rows.getInt(1), rows.getString(2));
				}
			}
		}
		return names;
	}

	/**
	 * Samples this database's sessions from the maintenance database, until the returned
	 * sampler is closed: every statement that starts in a session is seen as a new
	 * {@code query_start}, empty queries too, which the server log leaves out. A session
	 * that sends two statements between two samples shows the last one only.
	 * @param interval the time between two samples
	 * @return the sampler, running
	 */
	SessionSampler sampleSessions(Duration interval) throws SQLException {
		return new SessionSampler(maintenance(), this.name, interval);
	}

	private @Nullable String serverLog() {
		if (this.serverLog != null) {
			return this.serverLog;
		}
		try (Connection connection = maintenance();
				Statement statement = connection.createStatement();
				ResultSet row = statement.executeQuery("SELECT pg_current_logfile()")) {
			row.next();
			String file = row.getString(1);
			try (ResultSet dir = statement.executeQuery("SHOW data_directory")) {
				dir.next();
				String dataDirectory = dir.getString(1);
				if (file != null) {
					return file.startsWith("/") ? file : dataDirectory + "/" + file;
				}
				// Debian and Ubuntu clusters log to
				// /var/log/postgresql/postgresql-<version>-<cluster>.log
				Matcher debian = Pattern.compile("/var/lib/postgresql/([^/]+)/([^/]+)/?").matcher(dataDirectory);
				return debian.matches()
						? "/var/log/postgresql/postgresql-" + debian.group(1) + "-" + debian.group(2) + ".log" : null;
			}
		}
		catch (SQLException ex) {
			return null;
		}
	}

	private Connection maintenance() throws SQLException {
		return DriverManager.getConnection(this.serverUrl, this.user, this.password);
	}

	@Override
	public void close() throws SQLException {
		try (Connection connection = maintenance(); Statement statement = connection.createStatement()) {
			statement.execute("DROP DATABASE IF EXISTS " + this.name + " WITH (FORCE)");
		}
	}

}
