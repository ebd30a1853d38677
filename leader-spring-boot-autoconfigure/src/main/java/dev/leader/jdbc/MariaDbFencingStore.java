package dev.leader.jdbc;

import java.sql.ResultSet;
import java.time.Duration;

import javax.sql.DataSource;

import dev.leader.FencingToken;
import dev.leader.fencing.FencingStore;
import org.jspecify.annotations.Nullable;

/**
 * {@link FencingStore} on MariaDB, on the connection of the Spring-managed transaction
 * bound to the data source, whatever its isolation level.
 * <p>
 * The lease guard locks the group's {@code lease_terms} row {@code LOCK IN SHARE MODE}
 * (MariaDB rejects {@code FOR SHARE}): a grant and a release lock that row
 * {@code FOR UPDATE} and wait, while the holder's renewal updates only the {@code leases}
 * row and never waits (see {@link MariaDbCoordinationStore}). The expiry comes from the
 * {@code leases} row of the same term, read by a subquery without a lock. In a
 * {@code REPEATABLE READ} transaction that has read before the guard, that read is from
 * the transaction's snapshot, so it may show an older expiry of the term, never a later
 * one: a guard may then refuse a lease that a renewal since the snapshot kept valid, but
 * it never accepts an expired one.
 * <p>
 * After a guard or an advance that succeeded, the rest of the transaction is limited as
 * on PostgreSQL ({@link MariaDbHoldLimits}): each later statement may run, and the
 * transaction may stay idle, for at most the hold limit, the idle time in whole seconds.
 * The limits are set before the lock is taken, so that no moment of the transaction holds
 * the lock without them, and undone if the guard or the advance is refused.
 * <p>
 * Public so that a node can also be built without a Spring context.
 */
public final class MariaDbFencingStore implements FencingStore {

	/**
	 * The lease guard ({@link MariaDbSql#LOCK_LEASE}). A guard that locked nothing
	 * throws, and the transaction rolls back.
	 */
	private static final String LOCK_LEASE = MariaDbSql.LOCK_LEASE;

	/**
	 * The lease as it stands, for the message of a guard that locked nothing.
	 */
	private static final String READ_LEASE = """
			SELECT holder, term, expires_at > ${now} AS valid FROM ${prefix}leases WHERE group_name = ?""";

	/**
	 * Creates the fence if it is missing, or else locks it: an upsert that changes
	 * nothing, because it takes an exclusive lock on an existing row where a plain insert
	 * would take a shared one, and writers that wait for the same new fence would then
	 * deadlock when its creator rolls back.
	 */
	private static final String ENSURE_FENCE = """
			INSERT INTO ${prefix}fences (resource, group_name, term, updated_at) VALUES (?, ?, ?, ${now})
			ON DUPLICATE KEY UPDATE resource = resource""";

	private static final String READ_FENCE = "SELECT group_name, term FROM ${prefix}fences WHERE resource = ? FOR UPDATE";

	private static final String ADVANCE = """
			UPDATE ${prefix}fences SET term = ?, updated_at = ${now} WHERE resource = ?""";

	private final GuardStatements guards;

	private final MariaDbSql.Rendered sql;

	/**
	 * Creates a store.
	 * @param dataSource the data source whose transactions are fenced
	 * @param tablePrefix the prefix of the starter's tables
	 * @param queryTimeout the longest a statement may run, including the wait for the row
	 * lock; rounded up to whole seconds
	 * @param holdLimit the longest each later statement of a guarded transaction may run,
	 * and the longest it may stay idle (rounded down to whole seconds, at least one),
	 * while it holds the row lock; lower settings of the session are kept
	 */
	public MariaDbFencingStore(DataSource dataSource, TablePrefix tablePrefix, Duration queryTimeout,
			Duration holdLimit) {
		this.guards = new GuardStatements(dataSource, queryTimeout, holdLimit,
				"annotate the method with @Transactional");
		this.sql = MariaDbSql.renderAll(tablePrefix, LOCK_LEASE, READ_LEASE, ENSURE_FENCE, READ_FENCE, ADVANCE);
	}

	@Override
	public @Nullable LeaseLock lockLease(FencingToken token, String nodeId) {
		LeaseLock locked = execute("lock lease", this.sql.of(LOCK_LEASE), (statement) -> {
			statement.setString(1, token.group());
			statement.setString(2, nodeId);
			statement.setLong(3, token.term());
			MariaDbHoldLimits limits = MariaDbHoldLimits.apply(statement.getConnection(),
					this.guards.holdLimitMillis());
			try (ResultSet rows = statement.executeQuery()) {
				if (!rows.next()) {
					if (limits != null) {
						limits.undo();
					}
					return null;
				}
				return new LeaseLock(true, rows.getString("holder"), rows.getLong("term"), true);
			}
		});
		if (locked != null) {
			return locked;
		}
		return execute("read lease", this.sql.of(READ_LEASE), (statement) -> {
			statement.setString(1, token.group());
			try (ResultSet rows = statement.executeQuery()) {
				return rows.next()
						? new LeaseLock(false, rows.getString("holder"), rows.getLong("term"), rows.getBoolean("valid"))
						: null;
			}
		});
	}

	@Override
	public @Nullable Fence advance(String resource, FencingToken token) {
		// The upsert locks the fence's row: the limits come first.
		MariaDbHoldLimits limits = execute("advance fence", this.sql.of(ENSURE_FENCE), (statement) -> {
			statement.setString(1, resource);
			statement.setString(2, token.group());
			statement.setLong(3, token.term());
			MariaDbHoldLimits lowered = MariaDbHoldLimits.apply(statement.getConnection(),
					this.guards.holdLimitMillis());
			statement.executeUpdate();
			return lowered;
		});
		Fence fence = execute("advance fence", this.sql.of(READ_FENCE), (statement) -> {
			statement.setString(1, resource);
			try (ResultSet rows = statement.executeQuery()) {
				Fence read = null;
				if (rows.next()) {
					String group = rows.getString("group_name");
					long term = rows.getLong("term");
					boolean accepted = group.equals(token.group()) && term <= token.term();
					read = new Fence(accepted, group, accepted ? token.term() : term);
				}
				if ((read == null || !read.advanced()) && limits != null) {
					limits.undo();
				}
				return read;
			}
		});
		if (fence != null && fence.advanced()) {
			execute("advance fence", this.sql.of(ADVANCE), (statement) -> {
				statement.setLong(1, token.term());
				statement.setString(2, resource);
				return statement.executeUpdate();
			});
		}
		return fence;
	}

	private <T> @Nullable T execute(String task, String sql, Statements.Callback<@Nullable T> callback) {
		return this.guards.run(task, sql, callback);
	}

}
