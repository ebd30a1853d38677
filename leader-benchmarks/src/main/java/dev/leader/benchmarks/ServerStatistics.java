package dev.leader.benchmarks;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

import org.jspecify.annotations.Nullable;

/**
 * What the server counts and lists of the nodes' work in the benchmarks' database, read
 * from the maintenance database so that the reading adds nothing to the benchmarks' one.
 *
 * @param maintenance the server's maintenance database
 * @param database the name of the benchmarks' database
 * @param user the nodes' user, whose counters MariaDB keeps
 */
record ServerStatistics(MaintenanceDatabase maintenance, String database, String user) {

	/**
	 * Reads the server's counters of the nodes' work in the database. On PostgreSQL:
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
		boolean postgres = this.maintenance.dialect() == Dialect.POSTGRESQL;
		String sql = postgres
				? "SELECT xact_commit + xact_rollback, xact_rollback, -1 FROM pg_stat_database WHERE datname = ?"
				: "SELECT COMMIT_TRANSACTIONS + ROLLBACK_TRANSACTIONS, ROLLBACK_TRANSACTIONS, "
						+ "SELECT_COMMANDS + UPDATE_COMMANDS + OTHER_COMMANDS "
						+ "FROM information_schema.USER_STATISTICS WHERE USER = ?";
		try (Connection connection = this.maintenance.connect();
				PreparedStatement statement = connection.prepareStatement(sql)) {
			statement.setString(1, postgres ? this.database : this.user);
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
	 * Returns the {@code application_name} of every session of the database, by backend
	 * process id.
	 * @return the application name of each session, by backend process id
	 */
	Map<Integer, String> applicationNames() throws SQLException {
		Map<Integer, String> names = new HashMap<>();
		try (Connection connection = this.maintenance.connect();
				PreparedStatement statement = connection
					.prepareStatement("SELECT pid, application_name FROM pg_stat_activity WHERE datname = ?")) {
			statement.setString(1, this.database);
			try (ResultSet rows = statement.executeQuery()) {
				while (rows.next()) {
					names.put(rows.getInt(1), rows.getString(2));
				}
			}
		}
		return names;
	}

	/**
	 * Samples the database's sessions until the returned sampler is closed: every
	 * statement that starts in a session is seen as a new {@code query_start}, empty
	 * queries too, which the server log leaves out. A session that sends two statements
	 * between two samples shows the last one only. PostgreSQL only.
	 * @param interval the time between two samples
	 * @return the sampler, running, or {@code null} on MariaDB
	 */
	@Nullable SessionSampler sampleSessions(Duration interval) throws SQLException {
		return (this.maintenance.dialect() == Dialect.POSTGRESQL)
				? new SessionSampler(this.maintenance.connect(), this.database, interval) : null;
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

}
