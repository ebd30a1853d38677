package dev.leader.mariadb;

import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * The idle limits of a MariaDB session, in whole seconds, {@code 0} for none. MariaDB
 * ends a transaction that stays idle for longer than
 * {@code idle_write_transaction_timeout} if it has written,
 * {@code idle_readonly_transaction_timeout} if it has not (a locking read alone does not
 * count as a write), each where it is not {@code 0}, and {@code idle_transaction_timeout}
 * otherwise. Lowering {@code idle_transaction_timeout} alone therefore leaves a session's
 * own higher write or read-only limit in charge, so the starter sets all three.
 *
 * @param idle {@code idle_transaction_timeout}
 * @param write {@code idle_write_transaction_timeout}
 * @param readOnly {@code idle_readonly_transaction_timeout}
 */
record MariaDbIdleLimits(long idle, long write, long readOnly) {

	/**
	 * The select list that reads the session's limits, for {@link #read}.
	 */
	static final String SELECT = "@@session.idle_transaction_timeout AS idle_timeout, "
			+ "@@session.idle_write_transaction_timeout AS idle_write_timeout, "
			+ "@@session.idle_readonly_transaction_timeout AS idle_readonly_timeout";

	/**
	 * Reads the limits from a row selected with {@link #SELECT}.
	 * @param row the row, positioned
	 * @return the limits
	 * @throws SQLException if the row cannot be read
	 */
	static MariaDbIdleLimits read(ResultSet row) throws SQLException {
		return new MariaDbIdleLimits(row.getLong("idle_timeout"), row.getLong("idle_write_timeout"),
				row.getLong("idle_readonly_timeout"));
	}

	/**
	 * Returns the limits under which no transaction, written to or not, stays idle for
	 * longer than the given seconds, keeping the session's lower limits in effect.
	 * @param seconds the longest idle time, at least one second
	 * @return the limits, equal to these if they bound idle time by that much already
	 */
	MariaDbIdleLimits atMost(long seconds) {
		return new MariaDbIdleLimits(lower(this.idle, seconds), lower(effective(this.write), seconds),
				lower(effective(this.readOnly), seconds));
	}

	/**
	 * Returns the assignments that give a session these limits, for a {@code SET}
	 * statement.
	 * @return the assignments, of numbers formatted here
	 */
	String assignments() {
		return "idle_transaction_timeout = " + this.idle + ", idle_write_transaction_timeout = " + this.write
				+ ", idle_readonly_transaction_timeout = " + this.readOnly;
	}

	private long effective(long specific) {
		return (specific > 0) ? specific : this.idle;
	}

	private static long lower(long limit, long seconds) {
		return (limit > 0 && limit <= seconds) ? limit : seconds;
	}

}
