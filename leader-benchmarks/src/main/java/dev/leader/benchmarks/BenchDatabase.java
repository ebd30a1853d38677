package dev.leader.benchmarks;

import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leader.fencing.FencingStore;
import dev.leader.jdbc.LeaderSchemaMigration;
import dev.leader.jdbc.MariaDbCoordinationStore;
import dev.leader.jdbc.MariaDbFencingStore;
import dev.leader.jdbc.PostgresCoordinationStore;
import dev.leader.jdbc.PostgresFencingStore;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.CoordinationStore;
import org.jspecify.annotations.Nullable;

/**
 * A database of the benchmarks' own, on PostgreSQL or MariaDB ({@link Dialect}), so that
 * the server's counters count the benchmarked nodes and nothing else: created (dropped
 * first if left over) on start, dropped on {@link #close()}. The monitoring queries run
 * on the server's maintenance database, never on this one.
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

	private final Dialect dialect;

	private final String serverUrl;

	private final String adminUser;

	private final String adminPassword;

	private final String user;

	private final String password;

	private final String name;

	private final @Nullable String serverLog;

	private boolean userStatisticsWereOff;

	private BenchDatabase(String serverUrl, String adminUser, String adminPassword, String name,
			@Nullable String serverLog) {
		this.dialect = Dialect.of(serverUrl);
		this.serverUrl = serverUrl;
		this.adminUser = adminUser;
		this.adminPassword = adminPassword;
		this.name = name;
		this.serverLog = serverLog;
		boolean ownUser = this.dialect == Dialect.MARIADB;
		this.user = ownUser ? name : adminUser;
		this.password = ownUser ? newPassword() : adminPassword;
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
		BenchDatabase database = new BenchDatabase(serverUrl, user, password, name, serverLog);
		try (Connection connection = database.maintenance(); Statement statement = connection.createStatement()) {
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

	/**
	 * Makes the server log every statement of this database's new sessions with its
	 * duration ({@code log_min_duration_statement = 0}), empty queries included, so that
	 * {@link #serverLogSince(long)} can list them. Needs a superuser; PostgreSQL only.
	 * @return whether the setting was made
	 */
	boolean logStatements() {
		if (this.dialect != Dialect.POSTGRESQL) {
			return false;
		}
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

	/**
	 * Returns the JDBC URL of this database: the server's URL with this database's name
	 * in place of the maintenance database's, its parameters kept.
	 * @return the URL
	 */
	String url() {
		int hosts = this.serverUrl.indexOf("//") + 2;
		int query = this.serverUrl.indexOf('?', hosts);
		int end = (query >= 0) ? query : this.serverUrl.length();
		int slash = this.serverUrl.indexOf('/', hosts);
		String base = this.serverUrl.substring(0, (slash >= 0 && slash < end) ? slash : end) + "/" + this.name;
		return (query >= 0) ? base + this.serverUrl.substring(query) : base;
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

	String name() {
		return this.name;
	}

	/**
	 * Opens a connection to the benchmarks' database, for the harness's own queries.
	 * @return the connection
	 */
	Connection connect() throws SQLException {
		return DriverManager.getConnection(url(), this.adminUser, this.adminPassword);
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
		try (Connection connection = maintenance(); Statement statement = connection.createStatement()) {
			statement.execute("CHECKPOINT");
		}
		catch (SQLException ex) {
			System.out.println("NOTE no CHECKPOINT before the next benchmark: " + ex.getMessage());
		}
	}

	/**
	 * Reads the server's counters of the nodes' work in this database. On PostgreSQL:
	 * {@code pg_stat_database}'s committed and rolled-back transactions of the database,
	 * every autocommitted statement one (statements unknown). On MariaDB: the nodes'
	 * user's {@code USER_STATISTICS}: its statements
	 * ({@code SELECT_COMMANDS + UPDATE_COMMANDS + OTHER_COMMANDS}: every statement the
	 * nodes sent, {@code COMMIT}, {@code SET} and the wake-up's {@code GET_LOCK}
	 * included; a driver's ping is not one), and its commits and rollbacks
	 * ({@code COMMIT_TRANSACTIONS}, {@code ROLLBACK_TRANSACTIONS}), which are the storage
	 * engine's, not transactions: an autocommitted read of a table counts one, a
	 * {@code SELECT} without a table or a {@code GET_LOCK} none, and a transaction of
	 * {@code SET TRANSACTION}, {@code SELECT … FOR UPDATE}, {@code UPDATE} and
	 * {@code COMMIT} between {@code SET autocommit = 0} and {@code 1} three (probed on
	 * MariaDB 10.11).
	 * @return the counters
	 */
	Counters counters() throws SQLException {
		String sql = (this.dialect == Dialect.POSTGRESQL)
				? "SELECT xact_commit + xact_rollback, xact_rollback, -1 FROM pg_stat_database WHERE datname = ?"
				: "SELECT COMMIT_TRANSACTIONS + ROLLBACK_TRANSACTIONS, ROLLBACK_TRANSACTIONS, "
						+ "SELECT_COMMANDS + UPDATE_COMMANDS + OTHER_COMMANDS "
						+ "FROM information_schema.USER_STATISTICS WHERE USER = ?";
		try (Connection connection = maintenance(); PreparedStatement statement = connection.prepareStatement(sql)) {
			statement.setString(1, (this.dialect == Dialect.POSTGRESQL) ? this.name : this.user);
			try (ResultSet row = statement.executeQuery()) {
				if (!row.next()) {
					// MariaDB lists a user once it has connected.
					return new Counters(0, 0, 0);
				}
				return new Counters(row.getLong(1), row.getLong(2), row.getLong(3));
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
	 * that sends two statements between two samples shows the last one only. PostgreSQL
	 * only.
	 * @param interval the time between two samples
	 * @return the sampler, running, or {@code null} on MariaDB
	 */
	@Nullable SessionSampler sampleSessions(Duration interval) throws SQLException {
		return (this.dialect == Dialect.POSTGRESQL) ? new SessionSampler(maintenance(), this.name, interval) : null;
	}

	/**
	 * Returns the path of PostgreSQL's log; {@code null} on MariaDB, whose error log the
	 * harness does not read.
	 * @return the path, or {@code null}
	 */
	private @Nullable String serverLog() {
		if (this.dialect != Dialect.POSTGRESQL) {
			return null;
		}
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
		return DriverManager.getConnection(this.serverUrl, this.adminUser, this.adminPassword);
	}

	@Override
	public void close() throws SQLException {
		try (Connection connection = maintenance(); Statement statement = connection.createStatement()) {
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

	/**
	 * The server's counters of the nodes' work, see {@link #counters()}.
	 *
	 * @param transactions committed plus rolled-back transactions
	 * @param rollbacks rolled-back transactions
	 * @param statements statements, -1 where the server does not count them
	 */
	record Counters(long transactions, long rollbacks, long statements) {
	}

	/**
	 * What differs between the two servers for the harness: the drivers' URLs, the
	 * starter's stores, the SQL of the database clock and how its timestamps read.
	 */
	enum Dialect {

		/**
		 * PostgreSQL, with {@code LISTEN/NOTIFY}.
		 */
		POSTGRESQL("jdbc:postgresql:", "postgres", "clock_timestamp()"),

		/**
		 * MariaDB, with the {@code GET_LOCK} wake-up; its timestamps are
		 * {@code DATETIME(6)} in UTC, and its clock the expression the starter's MariaDB
		 * stores use.
		 */
		MARIADB("jdbc:mariadb:", "root",
				"(UTC_TIMESTAMP(6) + INTERVAL TIMESTAMPDIFF(MICROSECOND, NOW(6), SYSDATE(6)) MICROSECOND)");

		private final String urlPrefix;

		private final String defaultUser;

		private final String clock;

		Dialect(String urlPrefix, String defaultUser, String clock) {
			this.urlPrefix = urlPrefix;
			this.defaultUser = defaultUser;
			this.clock = clock;
		}

		/**
		 * Returns the dialect of a JDBC URL.
		 * @param url the URL
		 * @return the dialect
		 * @throws IllegalArgumentException if the URL is of neither server
		 */
		static Dialect of(String url) {
			for (Dialect dialect : values()) {
				if (url.startsWith(dialect.urlPrefix)) {
					return dialect;
				}
			}
			throw new IllegalArgumentException(
					"LEADER_BENCH_JDBC_URL must start with jdbc:postgresql: or jdbc:mariadb:, was " + url);
		}

		/**
		 * Returns the unit of {@link Counters#transactions()}: transactions on
		 * PostgreSQL, the storage engine's commits on MariaDB.
		 * @return the unit, per second
		 */
		String transactionUnit() {
			return (this == POSTGRESQL) ? "tx/s" : "commits/s";
		}

		/**
		 * Returns the user the harness connects as when none is given.
		 * @return the user
		 */
		String defaultUser() {
			return this.defaultUser;
		}

		/**
		 * Returns the SQL expression of the database clock at its evaluation, as the
		 * starter's stores read it.
		 * @return the expression
		 */
		String clock() {
			return this.clock;
		}

		/**
		 * Reads a timestamp the database clock wrote, such as a lease's
		 * {@code acquired_at}, or {@link #clock()}.
		 * @param row the row
		 * @param column the column, from 1
		 * @return the instant
		 */
		Instant instant(ResultSet row, int column) throws SQLException {
			return (this == POSTGRESQL) ? row.getObject(column, OffsetDateTime.class).toInstant()
					: row.getObject(column, LocalDateTime.class).toInstant(ZoneOffset.UTC);
		}

		CoordinationStore coordinationStore(DataSource dataSource, Duration queryTimeout) {
			return (this == POSTGRESQL) ? new PostgresCoordinationStore(dataSource, PREFIX, queryTimeout)
					: new MariaDbCoordinationStore(dataSource, PREFIX, queryTimeout);
		}

		FencingStore fencingStore(DataSource dataSource, Duration queryTimeout, Duration holdLimit) {
			return (this == POSTGRESQL) ? new PostgresFencingStore(dataSource, PREFIX, queryTimeout, holdLimit)
					: new MariaDbFencingStore(dataSource, PREFIX, queryTimeout, holdLimit);
		}

		/**
		 * Returns the sample application's argument that names a node's connections, so
		 * that the server lists them under the node's name.
		 * @param name the node's name
		 * @return the argument
		 */
		String connectionNameArgument(String name) {
			return (this == POSTGRESQL) ? "--spring.datasource.hikari.data-source-properties.ApplicationName=" + name
					: "--spring.datasource.hikari.data-source-properties.connectionAttributes=program_name:" + name;
		}

		/**
		 * Describes the server and its durability settings, for the {@code MACHINE} line.
		 * @param connection a connection to the server
		 * @return the description
		 */
		String describe(Connection connection) throws SQLException {
			String sql = (this == POSTGRESQL)
					? "SELECT 'PostgreSQL ' || current_setting('server_version') || ' (synchronous_commit=' "
							+ "|| current_setting('synchronous_commit') || ', fsync=' || current_setting('fsync') || ')'"
					: "SELECT CONCAT('MariaDB ', VERSION(), ' (innodb_flush_log_at_trx_commit=', "
							+ "@@innodb_flush_log_at_trx_commit, ', sync_binlog=', @@sync_binlog, ')')";
			try (Statement statement = connection.createStatement(); ResultSet row = statement.executeQuery(sql)) {
				row.next();
				return row.getString(1);
			}
		}

	}

}
