package dev.leader.postgres;

import java.sql.ResultSet;
import java.time.Duration;

import javax.sql.DataSource;

import dev.leader.FencingToken;
import dev.leader.fencing.FencingStore;
import dev.leader.jdbc.GuardStatements;
import dev.leader.jdbc.Statements;
import dev.leader.jdbc.TablePrefix;
import org.jspecify.annotations.Nullable;

/**
 * {@link FencingStore} on PostgreSQL, on the connection of the Spring-managed transaction
 * bound to the data source.
 * <p>
 * Built by {@link PostgresStoreFamily} unless the application defines its own store.
 * Public so that a node can also be built without a Spring context, as the test kit, the
 * benchmarks and the multi-process tests do.
 */
public final class PostgresFencingStore implements FencingStore {

	/**
	 * The lease guard. Only a row that this holder still holds with this term, unexpired,
	 * is locked, and FOR KEY SHARE is taken: it conflicts with the FOR UPDATE that a
	 * takeover and a release take, never with the holder's renewal, an UPDATE that
	 * changes no key. A guard that finds nothing to lock reads the row as it stands, for
	 * the message. A term of an epoch before the server's last promotion guards nothing:
	 * a higher term may have been granted on the old primary, with its writes lost, and
	 * every write after the promotion must come under a higher one.
	 */
	private static final String LOCK_LEASE = """
			WITH locked AS (
			  SELECT holder, term FROM ${prefix}leases
			  WHERE group_name = ? AND holder = ? AND term = ? AND expires_at > clock_timestamp()
			    AND term > (SELECT ${epoch_base})
			  FOR KEY SHARE
			)
			SELECT true AS locked, holder, term, true AS valid, ${hold_limits} AS limits FROM locked, ${hold}
			UNION ALL
			SELECT false, holder, term, expires_at > clock_timestamp() AND term > (SELECT ${epoch_base}), NULL
			FROM ${prefix}leases
			WHERE group_name = ? AND NOT EXISTS (SELECT 1 FROM locked)
			""";

	/**
	 * Advances a fence. A conflicting row is locked even when the WHERE clause keeps it
	 * unchanged; the fallback SELECT then reads it from the statement's snapshot, and
	 * finds nothing only if it was created concurrently: that fails closed. The commit of
	 * the caller's transaction is made {@linkplain Statements#DURABLE durable}: an
	 * advance lost in a crash would let a lower term pass the fence after the external
	 * write that the higher one made.
	 */
	private static final String ADVANCE = """
			WITH advanced AS (
			  INSERT INTO ${prefix}fences AS f (resource, group_name, term, updated_at)
			  VALUES (?, ?, ?, clock_timestamp())
			  ON CONFLICT (resource) DO UPDATE SET term = excluded.term, updated_at = clock_timestamp()
			  WHERE f.group_name = excluded.group_name AND f.term <= excluded.term
			  RETURNING f.group_name, f.term
			)
			SELECT true AS advanced, group_name, term, ${hold_limits} AS limits
			FROM advanced, ${hold}, (SELECT ${durable}) AS durable
			UNION ALL
			SELECT false, group_name, term, NULL FROM ${prefix}fences
			WHERE resource = ? AND NOT EXISTS (SELECT 1 FROM advanced)
			""";

	private final GuardStatements guards;

	private final String lockLeaseSql;

	private final String advanceSql;

	/**
	 * Creates a store.
	 * @param dataSource the data source whose transactions are fenced
	 * @param tablePrefix the prefix of the starter's tables
	 * @param queryTimeout the longest a statement may run, including the wait for the row
	 * lock; rounded up to whole seconds
	 * @param holdLimit the longest a transaction guarded by the lease or a fence may stay
	 * idle, and the longest each of its later statements may run, while it holds the row
	 * lock (lower settings of the session are kept): past it, the database ends the
	 * session or cancels the statement, so that a holder frozen or blocked inside the
	 * transaction cannot hold a takeover up for longer
	 */
	public PostgresFencingStore(DataSource dataSource, TablePrefix tablePrefix, Duration queryTimeout,
			Duration holdLimit) {
		this.guards = new GuardStatements(dataSource, queryTimeout, holdLimit,
				"annotate the method with @Transactional");
		this.lockLeaseSql = tablePrefix.render(LOCK_LEASE);
		this.advanceSql = tablePrefix.render(ADVANCE);
	}

	@Override
	public @Nullable LeaseLock lockLease(FencingToken token, String nodeId) {
		return execute("lock lease", this.lockLeaseSql, (statement) -> {
			statement.setString(1, token.group());
			statement.setString(2, nodeId);
			statement.setLong(3, token.term());
			statement.setLong(4, this.guards.holdLimitMillis());
			statement.setString(5, token.group());
			try (ResultSet rows = statement.executeQuery()) {
				return rows.next() ? new LeaseLock(rows.getBoolean("locked"), rows.getString("holder"),
						rows.getLong("term"), rows.getBoolean("valid")) : null;
			}
		});
	}

	@Override
	public @Nullable Fence advance(String resource, FencingToken token) {
		return execute("advance fence", this.advanceSql, (statement) -> {
			statement.setString(1, resource);
			statement.setString(2, token.group());
			statement.setLong(3, token.term());
			statement.setLong(4, this.guards.holdLimitMillis());
			statement.setString(5, resource);
			try (ResultSet rows = statement.executeQuery()) {
				return rows.next()
						? new Fence(rows.getBoolean("advanced"), rows.getString("group_name"), rows.getLong("term"))
						: null;
			}
		});
	}

	private <T> T execute(String task, String sql, Statements.Callback<T> callback) {
		return this.guards.run(task, sql, callback);
	}

}
