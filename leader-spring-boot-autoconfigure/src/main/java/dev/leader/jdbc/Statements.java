package dev.leader.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;

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
final class Statements {

	private static final SQLExceptionTranslator translator = new SQLStateSQLExceptionTranslator();

	/**
	 * A one-row {@code FROM} item with the hold limit of a guard as the interval {@code h.hold}, from one parameter in
	 * milliseconds.
	 */
	static final String HOLD = "(SELECT ?::bigint * interval '1 millisecond' AS hold) AS h";

	/**
	 * An expression, over {@link #HOLD}, that limits the rest of the caller's transaction to the hold limit, for a
	 * guard whose row lock holds a takeover up: each later statement may run, and the transaction may stay idle, that
	 * long at most. A lower limit of the session is kept. {@code SET LOCAL} in effect, so both end with the transaction.
	 * PostgreSQL before 17 has no limit on a whole transaction that keeps sending statements.
	 */
	static final String HOLD_LIMITS = limit("statement_timeout") + " || ' ' || "
			+ limit("idle_in_transaction_session_timeout");

	private final int timeoutSeconds;

	/**
	 * Creates a runner.
	 * @param timeout the longest a statement may run; rounded up to whole seconds, as JDBC counts them
	 */
	Statements(Duration timeout) {
		this.timeoutSeconds = (int) Math.max(1, (timeout.toMillis() + 999) / 1000);
	}

	/**
	 * Returns the query timeout.
	 * @return the timeout in whole seconds
	 */
	int timeoutSeconds() {
		return this.timeoutSeconds;
	}

	<T> T run(Connection connection, String task, String sql, Callback<T> callback) {
		try (PreparedStatement statement = connection.prepareStatement(sql)) {
			statement.setQueryTimeout(this.timeoutSeconds);
			return callback.doInStatement(statement);
		}
		catch (SQLException ex) {
			throw translate(task, ex);
		}
	}

	/**
	 * Runs a statement on the connection of the transaction that is active on the calling thread, for a check whose
	 * row lock must last as long as the writes it protects.
	 * @param dataSource the data source the transaction is bound to
	 * @param how what the caller must do to have such a transaction, for the message
	 * @throws IllegalTransactionStateException if no transaction on the data source is active
	 */
	<T> T runInTransaction(DataSource dataSource, String how, String task, String sql, Callback<T> callback) {
		if (!TransactionSynchronizationManager.isActualTransactionActive()
				|| !TransactionSynchronizationManager.hasResource(dataSource)) {
			throw new IllegalTransactionStateException("Fenced writes need a transaction on the application's "
					+ "DataSource, active on the calling thread: " + how + ", or call it inside "
					+ "TransactionTemplate.execute. A guard checked outside the transaction of its writes would not "
					+ "protect them");
		}
		Connection connection = DataSourceUtils.getConnection(dataSource);
		try {
			return run(connection, task, sql, callback);
		}
		finally {
			DataSourceUtils.releaseConnection(connection, dataSource);
		}
	}

	private static String limit(String setting) {
		String current = "current_setting('" + setting + "')";
		return """
				set_config('%1$s', CASE WHEN %2$s::interval > interval '0' AND %2$s::interval <= h.hold THEN %2$s
				  ELSE (extract(epoch FROM h.hold) * 1000)::bigint || 'ms' END, true)""".formatted(setting, current);
	}

	static Instant instant(ResultSet rows, int column) throws SQLException {
		return rows.getObject(column, OffsetDateTime.class).toInstant();
	}

	static RuntimeException translate(String task, SQLException ex) {
		RuntimeException translated = translator.translate(task, null, ex);
		return (translated != null) ? translated
				: new org.springframework.jdbc.UncategorizedSQLException(task, null, ex);
	}

	@FunctionalInterface
	interface Callback<T> {

		T doInStatement(PreparedStatement statement) throws SQLException;

	}

}
