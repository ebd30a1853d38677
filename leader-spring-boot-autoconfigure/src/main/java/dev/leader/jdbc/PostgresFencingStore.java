package dev.leader.jdbc;

import java.sql.ResultSet;
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

	private final long holdLimitMillis;

	private final String lockLeaseSql;

	private final String advanceSql;

	/**
	 * Creates a store.
	 * @param dataSource the data source whose transactions are fenced
	 * @param tablePrefix the prefix of the starter's tables
	 * @param queryTimeout the longest a statement may run, including the wait for the row lock; rounded up to whole
	 * seconds
	 * @param holdLimit the longest a transaction guarded by the lease or a fence may stay idle, and the longest each of
	 * its later statements may run, while it holds the row lock (lower settings of the session are kept): past it,
	 * the database ends the session or cancels the statement, so that a holder frozen or blocked inside the
	 * transaction cannot hold a takeover up for longer
	 */
	public PostgresFencingStore(DataSource dataSource, TablePrefix tablePrefix, Duration queryTimeout,
			Duration holdLimit) {
		this.dataSource = dataSource;
		this.statements = new Statements(queryTimeout);
		this.holdLimitMillis = Math.max(1, holdLimit.toMillis());
		String p = tablePrefix.value();
		// Only a row that this holder still holds with this term, unexpired, is locked, and FOR KEY SHARE is taken:
		// it conflicts with the FOR UPDATE that a takeover and a release take, never with the holder's renewal, an
		// UPDATE that changes no key. A guard that finds nothing to lock reads the row as it stands, for the message.
		// A term of an epoch before the server's last promotion guards nothing: a higher term may have been granted
		// on the old primary, with its writes lost, and every write after the promotion must come under a higher one.
		this.lockLeaseSql = """
				WITH locked AS (
				  SELECT holder, term FROM %1$sleases
				  WHERE group_name = ? AND holder = ? AND term = ? AND expires_at > clock_timestamp()
				    AND term > (SELECT %4$s)
				  FOR KEY SHARE
				)
				SELECT true, holder, term, true, %2$s FROM locked, %3$s
				UNION ALL
				SELECT false, holder, term, expires_at > clock_timestamp() AND term > (SELECT %4$s), NULL
				FROM %1$sleases
				WHERE group_name = ? AND NOT EXISTS (SELECT 1 FROM locked)
				""".formatted(p, Statements.HOLD_LIMITS, Statements.HOLD, Statements.EPOCH_BASE);
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
				SELECT true, group_name, term, %2$s FROM advanced, %3$s
				UNION ALL
				SELECT false, group_name, term, NULL FROM %1$sfences
				WHERE resource = ? AND NOT EXISTS (SELECT 1 FROM advanced)
				""".formatted(p, Statements.HOLD_LIMITS, Statements.HOLD);
	}

	@Override
	public @Nullable LeaseLock lockLease(FencingToken token, String nodeId) {
		return execute("lock lease", this.lockLeaseSql, (statement) -> {
			statement.setString(1, token.group());
			statement.setString(2, nodeId);
			statement.setLong(3, token.term());
			statement.setLong(4, this.holdLimitMillis);
			statement.setString(5, token.group());
			try (ResultSet rows = statement.executeQuery()) {
				return rows.next() ? new LeaseLock(rows.getBoolean(1), rows.getString(2), rows.getLong(3),
						rows.getBoolean(4)) : null;
			}
		});
	}

	@Override
	public @Nullable Fence advance(String resource, FencingToken token) {
		return execute("advance fence", this.advanceSql, (statement) -> {
			statement.setString(1, resource);
			statement.setString(2, token.group());
			statement.setLong(3, token.term());
			statement.setLong(4, this.holdLimitMillis);
			statement.setString(5, resource);
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
