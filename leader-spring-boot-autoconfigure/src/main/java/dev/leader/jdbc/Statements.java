package dev.leader.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;

import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.support.SQLExceptionTranslator;
import org.springframework.jdbc.support.SQLStateSQLExceptionTranslator;

/**
 * Runs one prepared statement of a store with a query timeout, translating failures to
 * {@link org.springframework.dao.DataAccessException}s.
 */
final class Statements {

	private static final SQLExceptionTranslator translator = new SQLStateSQLExceptionTranslator();

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
