package dev.leader.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import javax.sql.DataSource;

import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.jdbc.support.SQLExceptionTranslator;
import org.springframework.jdbc.support.SQLStateSQLExceptionTranslator;
import org.springframework.transaction.IllegalTransactionStateException;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Runs one prepared statement of a store with a query timeout, translating failures to
 * {@link org.springframework.dao.DataAccessException}s.
 */
public final class Statements {

	private static final SQLExceptionTranslator translator = new SQLStateSQLExceptionTranslator();

	/**
	 * A one-row {@code FROM} item with the hold limit of a guard as the interval
	 * {@code h.hold}, from one parameter in milliseconds.
	 */
	static final String HOLD = "(SELECT ?::bigint * interval '1 millisecond' AS hold) AS h";

	/**
	 * An expression, over {@link #HOLD}, that limits the rest of the caller's transaction
	 * to the hold limit, for a guard whose row lock holds a takeover up: each later
	 * statement may run, and the transaction may stay idle, that long at most. A lower
	 * limit of the session is kept. {@code SET LOCAL} in effect, so both end with the
	 * transaction. PostgreSQL before 17 has no limit on a whole transaction that keeps
	 * sending statements.
	 */
	static final String HOLD_LIMITS = limit("statement_timeout") + " || ' ' || "
			+ limit("idle_in_transaction_session_timeout");

	/**
	 * An expression for the first term of the server's fencing epoch,
	 * {@code (timeline - 1) << 32}: every promotion of a standby starts a new PostgreSQL
	 * timeline, so a term granted after it, no lower than this base plus one, is higher
	 * than every term granted before it, including grants that were lost with the old
	 * primary. The timeline is the one WAL is inserted on, from the name of the current
	 * WAL file; it is the new one from the moment a promotion completes, unlike the one
	 * that {@code pg_control_checkpoint()} shows until the next checkpoint. A server that
	 * was never promoted is on timeline 1, epoch base 0. Needs no privilege; fails on a
	 * standby, where nothing is granted.
	 */
	static final String EPOCH_BASE = "((('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint"
			+ " - 1) << 32)";

	/**
	 * An expression that makes the commit of the statement's own transaction durable,
	 * whatever the database's default: a {@code synchronous_commit} of {@code off} or
	 * {@code local} is raised to {@code on}; a stronger one ({@code remote_write},
	 * {@code remote_apply}) is kept. Grants and renewals need it, since a lost term
	 * increment could give two holders one term; appends and the leader's assignments
	 * too, since followers and nodes act on them once notified.
	 */
	static final String DURABLE = """
			set_config('synchronous_commit', CASE WHEN current_setting('synchronous_commit') IN ('off', 'local')
			  THEN 'on' ELSE current_setting('synchronous_commit') END, true)""";

	/**
	 * An expression for the milliseconds a lease row has left, by the database clock;
	 * negative once it has expired.
	 */
	static final String REMAINING_MS = "(extract(epoch from (expires_at - clock_timestamp())) * 1000)::bigint";

	/**
	 * An expression for the milliseconds since a node row's last heartbeat, by the
	 * database clock.
	 */
	static final String HEARTBEAT_AGE_MS = "(extract(epoch from (clock_timestamp() - heartbeat_at)) * 1000)::bigint";

	/**
	 * An expression, on a row of the nodes table, for the session the node is bound to
	 * ({@code PostgresSessions}): {@code NULL} when it is not bound, or was bound before
	 * the server last started (a shutdown or a promotion ended that session, and the
	 * heartbeat decides); the session's backend while it holds the node's advisory lock
	 * (nodes key, that backend); {@code 0} once it does not: the node's process died, or
	 * its session ended (a kill, or a crash of another backend, after which the server
	 * reinitializes without a new start time), and the node counts as dead whatever its
	 * last heartbeat ({@code DaemonRows.sessionEnded}).
	 */
	static final String NODE_SESSION = """
			CASE WHEN session_pid IS NULL OR session_server IS DISTINCT FROM pg_postmaster_start_time() THEN NULL
			     WHEN EXISTS (SELECT 1 FROM pg_locks k WHERE k.locktype = 'advisory' AND k.granted
			       AND k.pid = session_pid AND k.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			       AND k.classid = ${nodes_key}::oid AND k.objid = session_pid::oid AND k.objsubid = 2) THEN session_pid
			     ELSE 0 END""";

	/**
	 * The fragments that SQL templates name besides {@code ${prefix}}
	 * ({@link TablePrefix#render}): all constant.
	 */
	static final Map<String, String> FRAGMENTS = Map.of("hold", HOLD, "hold_limits", HOLD_LIMITS, "epoch_base",
			EPOCH_BASE, "durable", DURABLE, "remaining_ms", REMAINING_MS, "heartbeat_age_ms", HEARTBEAT_AGE_MS,
			"node_session", NODE_SESSION);

	private final int timeoutSeconds;

	/**
	 * Creates a runner.
	 * @param timeout the longest a statement may run; rounded up to whole seconds, as
	 * JDBC counts them
	 */
	public Statements(Duration timeout) {
		this.timeoutSeconds = (int) Math.max(1, (timeout.toMillis() + 999) / 1000);
	}

	/**
	 * Returns the query timeout.
	 * @return the timeout in whole seconds
	 */
	public int timeoutSeconds() {
		return this.timeoutSeconds;
	}

	public <T> T run(Connection connection, String task, String sql, Callback<T> callback) {
		try (PreparedStatement statement = connection.prepareStatement(sql)) {
			statement.setQueryTimeout(this.timeoutSeconds);
			return callback.doInStatement(statement);
		}
		catch (SQLException ex) {
			throw translate(task, ex);
		}
	}

	/**
	 * Runs a statement on the connection of the transaction that is active on the calling
	 * thread, for a check whose row lock must last as long as the writes it protects.
	 * @param <T> the type of the callback's result
	 * @param dataSource the data source the transaction is bound to
	 * @param how what the caller must do to have such a transaction, for the message
	 * @param task what the statement does, for the message of a failure
	 * @param sql the statement
	 * @param callback binds the parameters, executes the statement and reads its result
	 * @return the callback's result
	 * @throws IllegalTransactionStateException if no transaction on the data source is
	 * active
	 */
	<T> T runInTransaction(DataSource dataSource, String how, String task, String sql, Callback<T> callback) {
		if (!inTransaction(dataSource)) {
			// A transaction on another data source would commit the writes whatever the
			// guard found: the lock the guard takes ends with a transaction of its own.
			String found = TransactionSynchronizationManager.isActualTransactionActive()
					? " A transaction is active on this thread, but not on that DataSource: its transaction manager "
							+ "runs on another one, so the guard could not hold the lease for the writes. Give the "
							+ "writes a transaction manager on the starter's DataSource (@Transactional(\"name\") "
							+ "or a TransactionTemplate of it), or keep the starter's tables in the DataSource of the "
							+ "writes."
					: "";
			throw new IllegalTransactionStateException("Fenced writes need a transaction on the DataSource that "
					+ "the starter keeps its leases in (the @LeaderDataSource bean, else the application's only or "
					+ "primary DataSource), active on the calling thread: " + how + ", or call it inside "
					+ "TransactionTemplate.execute. A guard checked outside the transaction of its writes would not "
					+ "protect them." + found);
		}
		Connection connection = DataSourceUtils.getConnection(dataSource);
		try {
			return run(connection, task, sql, callback);
		}
		finally {
			DataSourceUtils.releaseConnection(connection, dataSource);
		}
	}

	/**
	 * Tells whether a Spring-managed transaction on the data source is active on the
	 * calling thread.
	 * @param dataSource the data source
	 * @return whether its statements would join that transaction
	 */
	public static boolean inTransaction(DataSource dataSource) {
		return TransactionSynchronizationManager.isActualTransactionActive()
				&& TransactionSynchronizationManager.hasResource(dataSource);
	}

	/**
	 * Fails a grant, renewal, append or assignment that PostgreSQL committed with a
	 * warning. The one these statements can meet is
	 * {@code canceling wait for synchronous replication}: a commit that waited for a
	 * synchronous standby was cancelled (by {@code pg_cancel_backend} or a driver's
	 * cancel request, such as the one the query timeout sends), and PostgreSQL then
	 * reports success for a commit that is on this server alone, such as an old primary
	 * cut off from its standby, which a failover is about to replace. Counted as a
	 * success, it would keep a node leading under a lease that the promoted standby lets
	 * expire; counted as a failure, the node steps down when its safe window closes. (A
	 * wait that is not cancelled simply hangs, since {@code statement_timeout} does not
	 * apply to the commit; the engine's watchdog closes the safe window then.)
	 * @param statement the statement that committed
	 * @throws SQLException carrying the warning
	 */
	public static void requireDurable(Statement statement) throws SQLException {
		for (SQLWarning warning = statement.getWarnings(); warning != null; warning = warning.getNextWarning()) {
			// Class 01 is a warning; a notice (00000) is information.
			if (warning.getSQLState() != null && warning.getSQLState().startsWith("01")) {
				throw new SQLException(
						"The commit is not known to be durable, PostgreSQL warned: " + warning.getMessage(), "08000",
						warning);
			}
		}
	}

	private static String limit(String setting) {
		return """
				set_config('${setting}', CASE WHEN current_setting('${setting}')::interval > interval '0'
				    AND current_setting('${setting}')::interval <= h.hold THEN current_setting('${setting}')
				  ELSE (extract(epoch FROM h.hold) * 1000)::bigint || 'ms' END, true)""".replace("${setting}", setting);
	}

	public static Instant instant(ResultSet rows, String column) throws SQLException {
		return rows.getObject(column, OffsetDateTime.class).toInstant();
	}

	/**
	 * Runs a query and reads each of its rows.
	 * @param <T> the type of a row's value
	 * @param statement the query, its parameters set
	 * @param reader reads the value of a row
	 * @return the values, in the order of the rows
	 * @throws SQLException if the query fails or a row cannot be read
	 */
	public static <T> List<T> list(PreparedStatement statement, RowReader<T> reader) throws SQLException {
		List<T> values = new ArrayList<>();
		try (ResultSet rows = statement.executeQuery()) {
			while (rows.next()) {
				values.add(reader.read(rows));
			}
		}
		return values;
	}

	/**
	 * Runs a query that returns a row, and reads the first.
	 * @param <T> the type of the row's value
	 * @param statement the query, its parameters set
	 * @param reader reads the value of the row
	 * @return the value
	 * @throws SQLException if the query fails or the row cannot be read
	 */
	public static <T> T first(PreparedStatement statement, RowReader<T> reader) throws SQLException {
		try (ResultSet rows = statement.executeQuery()) {
			rows.next();
			return reader.read(rows);
		}
	}

	public static RuntimeException translate(String task, SQLException ex) {
		RuntimeException translated = translator.translate(task, null, ex);
		return (translated != null) ? translated
				: new org.springframework.jdbc.UncategorizedSQLException(task, null, ex);
	}

	@FunctionalInterface
	public interface Callback<T> {

		T doInStatement(PreparedStatement statement) throws SQLException;

	}

}
