package dev.leader.mariadb;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The hold limits of a guarded transaction on MariaDB, which has no {@code SET LOCAL}: a
 * guard lowers the session's {@code max_statement_time} (each later statement) and its
 * idle limits (time idle inside the transaction, whether it has written or not, in whole
 * seconds, rounded down, at least one; {@link MariaDbIdleLimits}) to the hold limit,
 * keeping lower settings, and restores the session's own values when the transaction
 * completes, before Spring gives the connection back to the pool. Several guards in one
 * transaction restore once, the values from before the first.
 * <p>
 * A guard lowers the limits before it takes its lock, not after: between two statements
 * the client may stall (a paused process, a network stall), and a lock taken with the
 * session's own limits, often none, would then hold a takeover up for as long as the
 * stall, where the limits bound it. A guard that then finds nothing to lock
 * {@linkplain #undo() undoes} what it lowered.
 * <p>
 * The restore runs as a {@link TransactionSynchronization}; where the transaction has no
 * synchronization, nothing could restore the settings, so the guard sets none and the
 * transaction has no hold limit.
 */
final class MariaDbHoldLimits implements TransactionSynchronization {

	private static final Log logger = LogFactory.getLog(MariaDbHoldLimits.class);

	private final Connection connection;

	private final double statementTime;

	private final MariaDbIdleLimits idleLimits;

	private MariaDbHoldLimits(Connection connection, double statementTime, MariaDbIdleLimits idleLimits) {
		this.connection = connection;
		this.statementTime = statementTime;
		this.idleLimits = idleLimits;
	}

	/**
	 * Limits the rest of the transaction active on the connection.
	 * @param connection the connection of the transaction, which the guard is about to
	 * lock a row on
	 * @param holdMillis the hold limit
	 * @return the limits that this call lowered first in the transaction, to
	 * {@link #undo()} if the guard found no row to lock, or {@code null} if it changed
	 * nothing or an earlier guard of the transaction had lowered them already
	 * @throws SQLException if the settings cannot be read or changed
	 */
	static @Nullable MariaDbHoldLimits apply(Connection connection, long holdMillis) throws SQLException {
		if (!TransactionSynchronizationManager.isSynchronizationActive()) {
			return null;
		}
		double statementTime;
		MariaDbIdleLimits idleLimits;
		// A statement of its own, without a query timeout: MariaDB's driver runs a
		// statement with a timeout under SET STATEMENT max_statement_time, which would
		// hide the session's own value.
		try (Statement statement = connection.createStatement();
				ResultSet row = statement.executeQuery(
						"SELECT @@session.max_statement_time AS statement_time, " + MariaDbIdleLimits.SELECT)) {
			row.next();
			statementTime = row.getDouble("statement_time");
			idleLimits = MariaDbIdleLimits.read(row);
		}
		double holdSeconds = holdMillis / 1000.0;
		long holdWholeSeconds = Math.max(1, holdMillis / 1000);
		double newStatementTime = (statementTime > 0 && statementTime <= holdSeconds) ? statementTime : holdSeconds;
		MariaDbIdleLimits newIdleLimits = idleLimits.atMost(holdWholeSeconds);
		if (newStatementTime == statementTime && newIdleLimits.equals(idleLimits)) {
			return null;
		}
		MariaDbHoldLimits first = null;
		if (registered(connection) == null) {
			first = new MariaDbHoldLimits(connection, statementTime, idleLimits);
			TransactionSynchronizationManager.registerSynchronization(first);
		}
		set(connection, newStatementTime, newIdleLimits);
		return first;
	}

	/**
	 * Gives the session back the limits it had before {@link #apply}, for a guard that
	 * locked nothing; the restore at the transaction's completion then changes nothing.
	 * @throws SQLException if the settings cannot be changed
	 */
	void undo() throws SQLException {
		set(this.connection, this.statementTime, this.idleLimits);
	}

	private static @Nullable MariaDbHoldLimits registered(Connection connection) {
		for (TransactionSynchronization synchronization : TransactionSynchronizationManager.getSynchronizations()) {
			if (synchronization instanceof MariaDbHoldLimits limits && limits.connection == connection) {
				return limits;
			}
		}
		return null;
	}

	private static void set(Connection connection, double statementTime, MariaDbIdleLimits idleLimits)
			throws SQLException {
		try (Statement statement = connection.createStatement()) {
			// Numbers formatted here, never user input.
			statement.execute(String.format(Locale.ROOT, "SET SESSION max_statement_time = %.6f, %s", statementTime,
					idleLimits.assignments()));
		}
	}

	@Override
	public void afterCompletion(int status) {
		try {
			if (!this.connection.isClosed()) {
				set(this.connection, this.statementTime, this.idleLimits);
			}
		}
		catch (SQLException ex) {
			// The server may have ended the session at the idle limit; the pool retires
			// such a connection.
			logger
				.debug("Could not restore the session's statement and idle limits after a guarded transaction: " + ex);
		}
	}

}
