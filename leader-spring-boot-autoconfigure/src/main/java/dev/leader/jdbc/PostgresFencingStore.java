package dev.leader.jdbc;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;

import javax.sql.DataSource;

import dev.leader.FencingToken;
import dev.leader.fencing.FencingStore;
import org.jspecify.annotations.Nullable;


/**
 * {@link FencingStore} on PostgreSQL, on the connection of the Spring-managed transaction bound to the data source.
 */
public final class PostgresFencingStore implements FencingStore {

	private final DataSource dataSource;

	private final Statements statements;

	private final String holdLimitMillis;

	private final String lockLeaseSql;

	private final String advanceSql;

	/**
	 * Creates a store.
	 * @param dataSource the data source whose transactions are fenced
	 * @param tablePrefix the prefix of the starter's tables
	 * @param queryTimeout the longest a statement may run, including the wait for the row lock; rounded up to whole
	 * seconds
	 * @param holdLimit the longest a guarded transaction may stay idle holding the lease row's lock; past it, the
	 * database ends the session, so that a holder frozen inside the transaction cannot hold a takeover up
	 */
	public PostgresFencingStore(DataSource dataSource, TablePrefix tablePrefix, Duration queryTimeout,
			Duration holdLimit) {
		this.dataSource = dataSource;
		this.statements = new Statements(queryTimeout);
		this.holdLimitMillis = Long.toString(Math.max(1, holdLimit.toMillis()));
		String p = tablePrefix.value();
		// SET LOCAL of the idle timeout, for this transaction only: a takeover waits for the lock, so a holder frozen
		// (paused, stalled) inside its transaction would otherwise hold every other node up for as long as it stays so.
		this.lockLeaseSql = """
				SELECT holder, term, expires_at > clock_timestamp(),
				       set_config('idle_in_transaction_session_timeout', ?, true)
				FROM %sleases WHERE group_name = ? FOR SHARE
				""".formatted(p);
		// A conflicting row is locked even when the WHERE clause keeps it unchanged; the fallback SELECT then reads
		// it from the statement's snapshot, and finds nothing only if it was created concurrently: that fails closed.
		this.advanceSql = """
				WITH advanced AS (
				  INSERT INTO %1$sfences AS f (resource, group_name, term, updated_at)
				  VALUES (?, ?, ?, clock_timestamp())
				  ON CONFLICT (resource) DO UPDATE SET term = excluded.term, updated_at = clock_timestamp()
				  WHERE f.group_name = excluded.group_name AND f.term <= excluded.term
				  RETURNING f.group_name, f.term
				)
				SELECT true, group_name, term FROM advanced
				UNION ALL
				SELECT false, group_name, term FROM %1$sfences
				WHERE resource = ? AND NOT EXISTS (SELECT 1 FROM advanced)
				""".formatted(p);
	}

	@Override
	public @Nullable LeaseLock lockLease(String group) {
		return execute("lock lease", this.lockLeaseSql, (statement) -> {
			statement.setString(1, this.holdLimitMillis);
			statement.setString(2, group);
			try (ResultSet rows = statement.executeQuery()) {
				return rows.next() ? new LeaseLock(rows.getString(1), rows.getLong(2), rows.getBoolean(3)) : null;
			}
		});
	}

	@Override
	public @Nullable Fence advance(String resource, FencingToken token) {
		return execute("advance fence", this.advanceSql, (statement) -> {
			statement.setString(1, resource);
			statement.setString(2, token.group());
			statement.setLong(3, token.term());
			statement.setString(4, resource);
			try (ResultSet rows = statement.executeQuery()) {
				return rows.next() ? new Fence(rows.getBoolean(1), rows.getString(2), rows.getLong(3)) : null;
			}
		});
	}

	private <T> T execute(String task, String sql, Statements.Callback<T> callback) {
		return this.statements.runInTransaction(this.dataSource, "annotate the method with @Transactional", task, sql,
				callback);
	}

}
