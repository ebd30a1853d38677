package dev.leader.mariadb;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import javax.sql.DataSource;

import dev.leader.jdbc.OwnConnections;
import dev.leader.jdbc.Statements;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * Runs the MariaDB stores' transitions, each in one transaction of its own on a
 * connection of the application's pool, with the settings the statements need whatever
 * the pool's defaults: auto-commit off for the transaction and restored afterwards, and
 * {@code READ COMMITTED} set for that one transaction only
 * ({@code SET TRANSACTION ISOLATION LEVEL}, which MariaDB applies to the next transaction
 * and forgets), so nothing of the session changes for the application. Every statement
 * runs with the query timeout, and the connection with a network timeout of twice that.
 * <p>
 * The transaction may stay idle between its statements for at most the query timeout (the
 * session's idle limits, {@link MariaDbIdleLimits}, lowered before the transaction begins
 * and restored after it ends, in the same statement as auto-commit with MariaDB's driver,
 * keeping the pool's lower ones): a node frozen in the middle of a transition (a paused
 * process, a stalled network) would otherwise keep its row locks, and hold up every other
 * node's grant, for as long as it stays frozen.
 * <p>
 * MariaDB has no statement that upserts and returns rows in one round trip on both
 * MariaDB and MySQL, nor {@code UPDATE … RETURNING}, so a transition is a transaction of
 * a few statements rather than the one statement it is on PostgreSQL: its row locks are
 * taken first, and its times read after them, so that the transition is as atomic and as
 * well ordered as the PostgreSQL statement.
 * <p>
 * The heartbeat and the daemons' read need no transaction where the pool auto-commits:
 * their statements each commit on their own ({@link #autoCommitted}).
 * <p>
 * Unlike on PostgreSQL, the pool's check of a connection that idled is a ping, not a
 * transaction, so connections are borrowed for each transition rather than kept.
 * Thread-safe.
 */
final class MariaDbConnections {

	private static final Log logger = LogFactory.getLog(MariaDbConnections.class);

	private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSSSSS",
			Locale.ROOT);

	private final DataSource dataSource;

	private final Statements statements;

	private final int networkTimeoutMillis;

	private volatile @Nullable Integer isolation;

	private volatile @Nullable Boolean autoCommits;

	private volatile @Nullable MariaDbIdleLimits idleLimits;

	private volatile @Nullable Boolean followsServerAutoCommit;

	private final long idleLimitSeconds;

	/**
	 * Creates a runner.
	 * @param dataSource the MariaDB data source
	 * @param queryTimeout the longest a statement may run; rounded up to whole seconds
	 */
	MariaDbConnections(DataSource dataSource, Duration queryTimeout) {
		this.dataSource = dataSource;
		this.statements = new Statements(queryTimeout);
		this.networkTimeoutMillis = 2 * this.statements.timeoutSeconds() * 1000;
		this.idleLimitSeconds = this.statements.timeoutSeconds();
	}

	/**
	 * Returns the runner of single statements, with the query timeout.
	 * @return the statements
	 */
	Statements statements() {
		return this.statements;
	}

	/**
	 * Runs a transition in a transaction of its own, and commits it, or rolls it back if
	 * it fails.
	 * @param <T> the type of the result
	 * @param task what the transition does, for the message of a failure
	 * @param work the transition
	 * @return the result of the transition
	 * @throws org.springframework.dao.DataAccessException if the transition fails
	 */
	<T> T transaction(String task, Work<T> work) {
		Connection connection = borrow(task);
		boolean autoCommit = true;
		MariaDbIdleLimits sessionIdle = null;
		try {
			autoCommit = connection.getAutoCommit();
			sessionIdle = idleLimits(connection);
			MariaDbIdleLimits limited = sessionIdle.atMost(this.idleLimitSeconds);
			if (!limited.equals(sessionIdle) && autoCommit && followsServerAutoCommit(connection)) {
				// One round trip, as setAutoCommit(false) alone would be.
				execute(connection, "SET autocommit = 0, " + limited.assignments());
			}
			else {
				if (!limited.equals(sessionIdle)) {
					execute(connection, "SET " + limited.assignments());
				}
				if (autoCommit) {
					connection.setAutoCommit(false);
				}
			}
			if (!readCommitted(connection)) {
				execute(connection, "SET TRANSACTION ISOLATION LEVEL READ COMMITTED");
			}
			T result = work.run(new Transaction(connection, this.statements));
			connection.commit();
			return result;
		}
		catch (SQLException | RuntimeException ex) {
			rollbackQuietly(connection);
			throw (ex instanceof SQLException sql) ? Statements.translate(task, sql) : (RuntimeException) ex;
		}
		finally {
			try {
				// Nothing changed yet where the limits could not be read.
				if (sessionIdle != null && !connection.isClosed()) {
					restore(connection, autoCommit, sessionIdle);
				}
			}
			catch (SQLException ex) {
				logger.debug("Could not restore a connection's auto-commit and idle limit; the pool resets or retires "
						+ "it: " + ex);
			}
			OwnConnections.closeQuietly(connection);
		}
	}

	/**
	 * Runs statements that each commit on their own, on a connection of the pool, where
	 * the pool's connections auto-commit and read only committed rows (any isolation
	 * level but {@code READ UNCOMMITTED}), and the driver is MariaDB's: a single
	 * statement then reads one consistent snapshot, or locks and writes its rows, and
	 * commits, with none of the statements that set a transaction up and restore the
	 * session afterwards. Elsewhere, runs nothing. MariaDB's driver reports the
	 * auto-commit mode of the server's last reply; MySQL's keeps the one it last set, and
	 * would report a session whose {@code SET autocommit = 0} came as SQL (an init SQL of
	 * the pool) as auto-committing, leaving these statements in a transaction nobody
	 * commits.
	 * @param <T> the type of the result
	 * @param task what the statements do, for the message of a failure
	 * @param work the statements; returns {@code null} where the caller should fall back
	 * to a {@link #transaction}
	 * @return the result, or {@code null} if the work returned {@code null} or the pool's
	 * connections do not allow it
	 * @throws org.springframework.dao.DataAccessException if a statement fails
	 */
	<T> @Nullable T autoCommitted(String task, Work<@Nullable T> work) {
		if (Boolean.FALSE.equals(this.autoCommits)) {
			return null;
		}
		Connection connection = borrow(task);
		try {
			Boolean autoCommits = this.autoCommits;
			if (autoCommits == null) {
				// The pool's default, read once, as the isolation level is.
				autoCommits = connection.getAutoCommit() && followsServerAutoCommit(connection)
						&& isolation(connection) != Connection.TRANSACTION_READ_UNCOMMITTED;
				this.autoCommits = autoCommits;
			}
			if (!autoCommits || !connection.getAutoCommit()) {
				return null;
			}
			return work.run(new Transaction(connection, this.statements));
		}
		catch (SQLException ex) {
			throw Statements.translate(task, ex);
		}
		finally {
			OwnConnections.closeQuietly(connection);
		}
	}

	private Connection borrow(String task) {
		try {
			Connection connection = this.dataSource.getConnection();
			try {
				connection.setNetworkTimeout(Runnable::run, this.networkTimeoutMillis);
			}
			catch (SQLFeatureNotSupportedException ex) {
				// The query timeout still bounds statements on a server that answers.
			}
			catch (SQLException ex) {
				OwnConnections.closeQuietly(connection);
				throw ex;
			}
			return connection;
		}
		catch (SQLException ex) {
			throw Statements.translate(task, ex);
		}
	}

	/**
	 * Fails unless the data source leads to a writable MariaDB server, and warns when the
	 * server may lose a commit in a crash ({@link #durabilityProblems}), since a grant
	 * lost in a crash of the server could then be granted again under the same term.
	 * @throws IllegalStateException if its connections or the server are read-only
	 * @throws SQLException if the database cannot be reached
	 */
	void requireWritablePrimary() throws SQLException {
		try (Connection connection = this.dataSource.getConnection();
				Statement statement = connection.createStatement();
				ResultSet row = statement.executeQuery("""
						SELECT @@global.read_only AS read_only, @@session.tx_read_only AS tx_read_only,
						       @@global.innodb_flush_log_at_trx_commit AS flush, @@global.log_bin AS log_bin,
						       @@global.sync_binlog AS sync_binlog""")) {
			row.next();
			String problem = null;
			if (connection.isReadOnly()) {
				problem = "its connections are read-only (for example spring.datasource.hikari.read-only=true)";
			}
			else if (row.getBoolean("read_only")) {
				problem = "the server is read-only (read_only is ON, as on a replica)";
			}
			else if (row.getBoolean("tx_read_only")) {
				problem = "its transactions are read-only (tx_read_only is ON for the session)";
			}
			if (!connection.getAutoCommit()) {
				connection.rollback();
			}
			if (problem != null) {
				throw new IllegalStateException("leader-spring-boot-starter writes its leases to the application's "
						+ "DataSource, but " + problem + ". Point spring.datasource.url at the primary, and give the "
						+ "starter a writable connection");
			}
			List<String> problems = durabilityProblems(row.getInt("flush"), row.getBoolean("log_bin"),
					row.getLong("sync_binlog"));
			if (!problems.isEmpty()) {
				logger.warn("MariaDB may lose a commit in a crash: " + String.join("; ", problems) + ". A lease "
						+ "granted or a decision appended just before such a crash may be lost, and the term granted "
						+ "again to another node. Set innodb_flush_log_at_trx_commit=1 and, with the binary log on, "
						+ "sync_binlog=1 where leases must survive a crash");
			}
		}
	}

	/**
	 * Tells why the server's settings let a crash lose a commit that was acknowledged:
	 * InnoDB's redo log flushed about once a second rather than at every commit
	 * ({@code innodb_flush_log_at_trx_commit} 0 or 2; 1 and 3 flush at every commit), or
	 * a binary log that is not synced at every commit ({@code sync_binlog} other than 1):
	 * with the binary log on, the binary log decides after a crash which transactions
	 * InnoDB had prepared are committed, and InnoDB does not flush the commit itself, so
	 * a commit whose binary log events were lost is rolled back, even with
	 * {@code innodb_flush_log_at_trx_commit=1} (MariaDB's "Group Commit for the Binary
	 * Log").
	 * @param flush {@code innodb_flush_log_at_trx_commit}
	 * @param logBin {@code log_bin}
	 * @param syncBinlog {@code sync_binlog}
	 * @return what may be lost and why, empty if a commit survives a crash of the server
	 * and of the operating system
	 */
	private static List<String> durabilityProblems(int flush, boolean logBin, long syncBinlog) {
		List<String> problems = new ArrayList<>();
		if (flush == 0) {
			problems.add("innodb_flush_log_at_trx_commit is 0, so InnoDB writes and flushes its redo log about once "
					+ "a second, and a crash of the server loses up to a second of commits");
		}
		else if (flush == 2) {
			problems.add("innodb_flush_log_at_trx_commit is 2, so InnoDB flushes its redo log about once a second, "
					+ "and a crash of the operating system or a power loss loses up to a second of commits");
		}
		else if (flush != 1 && flush != 3) {
			problems.add("innodb_flush_log_at_trx_commit is " + flush + ", not 1");
		}
		if (logBin && syncBinlog != 1) {
			problems.add("the binary log is on (log_bin) and sync_binlog is " + syncBinlog + ", so the server "
					+ ((syncBinlog == 0) ? "leaves flushing the binary log to the operating system"
							: "flushes the binary log only every " + syncBinlog + " commits")
					+ ", and a crash of the operating system or a power loss rolls back the commits whose binary log "
					+ "events were lost, even with innodb_flush_log_at_trx_commit=1");
		}
		return problems;
	}

	private void restore(Connection connection, boolean autoCommit, MariaDbIdleLimits idleLimits) throws SQLException {
		boolean limited = !idleLimits.atMost(this.idleLimitSeconds).equals(idleLimits);
		if (limited && autoCommit && followsServerAutoCommit(connection)) {
			execute(connection, "SET autocommit = 1, " + idleLimits.assignments());
			return;
		}
		if (autoCommit) {
			connection.setAutoCommit(true);
		}
		if (limited) {
			execute(connection, "SET " + idleLimits.assignments());
		}
	}

	/**
	 * Tells whether the pool's driver takes auto-commit from the status the server sends
	 * with each reply, as MariaDB's driver does, so that a {@code SET autocommit}
	 * statement can switch it together with the idle limits. MySQL's driver (Connector/J)
	 * keeps the mode that {@link Connection#setAutoCommit} set, and refuses to commit a
	 * transaction that such a statement began ("Can't call commit when autocommit=true"),
	 * so with it the mode is set through the driver, in a round trip of its own. Read
	 * once.
	 * @param connection a connection of the pool
	 * @return whether the driver follows the server's auto-commit status
	 */
	private boolean followsServerAutoCommit(Connection connection) throws SQLException {
		Boolean follows = this.followsServerAutoCommit;
		if (follows == null) {
			follows = isMariaDbDriver(connection);
			this.followsServerAutoCommit = follows;
		}
		return follows;
	}

	private static boolean isMariaDbDriver(Connection connection) throws SQLException {
		return connection.getMetaData().getDriverName().toLowerCase(Locale.ROOT).contains("mariadb");
	}

	/**
	 * Binds a {@code DATETIME(6)} parameter that holds a UTC time, with its microseconds.
	 * MariaDB's driver binds the {@code LocalDateTime}. Another driver gets it as text:
	 * MySQL's driver (Connector/J) takes MariaDB, whose handshake announces MySQL
	 * {@code 5.5.5}, for a server without fractions of a second, and would send the time
	 * cut to the second, which ends a lease granted at that time up to a second before
	 * its holder counts. MariaDB converts the text where it meets a time.
	 * @param statement the statement
	 * @param index the parameter's index
	 * @param time the time, or {@code null}
	 * @throws SQLException if the parameter cannot be bound
	 */
	static void setTime(PreparedStatement statement, int index, @Nullable LocalDateTime time) throws SQLException {
		if (time == null) {
			statement.setNull(index, Types.TIMESTAMP);
		}
		else if (isMariaDbDriver(statement.getConnection())) {
			statement.setObject(index, time);
		}
		else {
			statement.setString(index, TIME.format(time));
		}
	}

	/**
	 * Returns the pool's idle limits, read once, as the isolation level is.
	 * @param connection a connection of the pool
	 * @return the session's idle limits
	 */
	private MariaDbIdleLimits idleLimits(Connection connection) throws SQLException {
		MariaDbIdleLimits idleLimits = this.idleLimits;
		if (idleLimits == null) {
			try (Statement statement = connection.createStatement();
					ResultSet row = statement.executeQuery("SELECT " + MariaDbIdleLimits.SELECT)) {
				row.next();
				idleLimits = MariaDbIdleLimits.read(row);
			}
			this.idleLimits = idleLimits;
		}
		return idleLimits;
	}

	private static void execute(Connection connection, String sql) throws SQLException {
		// Numbers formatted here and fixed text, never user input.
		try (Statement statement = connection.createStatement()) {
			statement.execute(sql);
		}
	}

	private boolean readCommitted(Connection connection) throws SQLException {
		return isolation(connection) == Connection.TRANSACTION_READ_COMMITTED;
	}

	private int isolation(Connection connection) throws SQLException {
		Integer isolation = this.isolation;
		if (isolation == null) {
			// The pool's default, read once: a connection may come back with another
			// level only if the application changed it and the pool did not reset it.
			isolation = connection.getTransactionIsolation();
			this.isolation = isolation;
		}
		return isolation;
	}

	private static void rollbackQuietly(Connection connection) {
		try {
			if (!connection.isClosed()) {
				connection.rollback();
			}
		}
		catch (SQLException ex) {
			logger.debug("Could not roll a failed transition back; the pool resets or retires the connection: " + ex);
		}
	}

	/**
	 * Reads a {@code DATETIME(6)} column that holds a UTC time.
	 * @param rows the rows, on the row to read
	 * @param column the column
	 * @return the instant, or {@code null} if the column is {@code NULL}
	 * @throws SQLException if the column cannot be read
	 */
	static @Nullable Instant instant(ResultSet rows, String column) throws SQLException {
		LocalDateTime time = rows.getObject(column, LocalDateTime.class);
		return (time != null) ? time.toInstant(ZoneOffset.UTC) : null;
	}

	/**
	 * Returns a parameter for a {@code DATETIME(6)} column that holds a UTC time.
	 * @param instant the instant
	 * @return the parameter
	 */
	static @Nullable LocalDateTime parameter(@Nullable Instant instant) {
		return (instant != null) ? LocalDateTime.ofInstant(instant, ZoneOffset.UTC) : null;
	}

	/**
	 * A transition, run on the connection of its transaction.
	 *
	 * @param <T> the type of its result
	 */
	@FunctionalInterface
	interface Work<T> {

		T run(Transaction transaction) throws SQLException;

	}

	/**
	 * The statements of one transaction.
	 *
	 * @param connection the connection
	 * @param statements runs each statement with the query timeout
	 */
	record Transaction(Connection connection, Statements statements) {

		/**
		 * Runs one statement of the transaction.
		 * @param <T> the type of the callback's result
		 * @param sql the statement
		 * @param callback binds the parameters, executes the statement and reads its
		 * result
		 * @return the callback's result
		 * @throws SQLException if the statement fails
		 */
		<T> T run(String sql, Statements.Callback<T> callback) throws SQLException {
			try (PreparedStatement statement = this.connection.prepareStatement(sql)) {
				statement.setQueryTimeout(this.statements.timeoutSeconds());
				return callback.doInStatement(statement);
			}
		}

		/**
		 * Runs a statement that changes rows, binding the parameters in order.
		 * @param sql the statement
		 * @param parameters the parameters
		 * @return the count the driver reports, which for an update depends on the
		 * connection's flags (rows found or rows changed): use it only where both are the
		 * same
		 * @throws SQLException if the statement fails
		 */
		int update(String sql, @Nullable Object... parameters) throws SQLException {
			return run(sql, (statement) -> {
				bind(statement, parameters);
				return statement.executeUpdate();
			});
		}

		/**
		 * Reads the database clock ({@link MariaDbSql#NOW}).
		 * @return the database's time in UTC
		 * @throws SQLException if the statement fails
		 */
		LocalDateTime now() throws SQLException {
			return run("SELECT " + MariaDbSql.NOW + " AS now", (statement) -> {
				try (ResultSet rows = statement.executeQuery()) {
					rows.next();
					return rows.getObject("now", LocalDateTime.class);
				}
			});
		}

		static void bind(PreparedStatement statement, @Nullable Object... parameters) throws SQLException {
			for (int i = 0; i < parameters.length; i++) {
				if (parameters[i] instanceof LocalDateTime time) {
					setTime(statement, i + 1, time);
				}
				else if (parameters[i] != null) {
					statement.setObject(i + 1, parameters[i]);
				}
				else {
					statement.setNull(i + 1, Types.VARCHAR);
				}
			}
		}

	}

}
