package dev.leader.mariadb;

import java.sql.ResultSet;
import java.time.Duration;
import java.time.LocalDateTime;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import javax.sql.DataSource;

import dev.leader.FencingToken;
import dev.leader.fencing.FencingStore;
import dev.leader.jdbc.GuardStatements;
import dev.leader.jdbc.Statements;
import dev.leader.jdbc.TablePrefix;
import org.jspecify.annotations.Nullable;

/**
 * {@link FencingStore} on MariaDB, on the connection of the Spring-managed transaction
 * bound to the data source, whatever its isolation level.
 * <p>
 * The lease guard locks the group's {@code lease_terms} row {@code LOCK IN SHARE MODE}
 * (MariaDB rejects {@code FOR SHARE}): a grant and a release lock that row
 * {@code FOR UPDATE} and wait, while the holder's renewal updates only the {@code leases}
 * row and never waits (see {@link MariaDbCoordinationStore}). The guard does not read the
 * {@code leases} row: at {@code SERIALIZABLE} with auto-commit off InnoDB turns every
 * read of a transaction into a shared lock, which would hold the renewal up until the
 * transaction ends. It compares the database time, once the row is locked, with the
 * latest expiry of the term that the node's coordination store saw committed
 * ({@link MariaDbSql#LOCK_LEASE_BEFORE}), a lower bound of the term's expiry: a guard may
 * refuse a lease that a renewal the node has not seen yet kept valid, but it never
 * accepts an expired one, at any isolation level. Without that store, or for a term it
 * has not seen, the guard reads the expiry from the {@code leases} row
 * ({@link MariaDbSql#LOCK_LEASE}), which is right at every level but holds a renewal up
 * at {@code SERIALIZABLE}.
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

	private final MariaDbConnections connections;

	/**
	 * The fences this store knows to exist: a fence is never deleted.
	 */
	private final Set<String> created = ConcurrentHashMap.newKeySet();

	private final @Nullable MariaDbCoordinationStore leases;

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
	 * @param leases the node's coordination store, whose grants and renewals tell the
	 * guard the expiry of the node's terms, or {@code null} for none: the guard then
	 * reads the expiry from the lease row, and at {@code SERIALIZABLE} holds the node's
	 * renewal up until the guarded transaction ends
	 */
	public MariaDbFencingStore(DataSource dataSource, TablePrefix tablePrefix, Duration queryTimeout,
			Duration holdLimit, @Nullable MariaDbCoordinationStore leases) {
		this.guards = new GuardStatements(dataSource, queryTimeout, holdLimit,
				"annotate the method with @Transactional");
		this.connections = new MariaDbConnections(dataSource, queryTimeout);
		this.leases = leases;
		this.sql = MariaDbSql.renderAll(tablePrefix, MariaDbSql.LOCK_LEASE, MariaDbSql.LOCK_LEASE_BEFORE, READ_LEASE,
				ENSURE_FENCE, READ_FENCE, ADVANCE);
	}

	@Override
	public @Nullable LeaseLock lockLease(FencingToken token, String nodeId) {
		LocalDateTime expiry = (this.leases != null) ? this.leases.expiry(token.group(), token.term()) : null;
		LeaseLock locked = execute("lock lease", this.sql.of(MariaDbSql.lockLease(expiry)), (statement) -> {
			MariaDbHoldLimits.apply(statement.getConnection(), this.guards.holdLimitMillis());
			// A refused guard keeps the limits: its key lookup may have locked the row,
			// which a
			// takeover or a release would then wait for as long as the caller's
			// transaction
			// lasts.
			MariaDbSql.LeaseGuard outcome = MariaDbSql.lockLease(statement, expiry, token, nodeId);
			return switch (outcome) {
				case LOCKED -> new LeaseLock(true, nodeId, token.term(), true);
				// Without a read of the lease row, which would lock it.
				case EXPIRED -> new LeaseLock(false, nodeId, token.term(), false);
				case REFUSED -> null;
			};
		});
		if (locked != null) {
			return locked;
		}
		// For the message, in a transaction of the starter's own: in the caller's, at
		// SERIALIZABLE, the read would lock the lease row that the holder renews.
		return this.connections.transaction("read lease", (tx) -> tx.run(this.sql.of(READ_LEASE), (statement) -> {
			statement.setString(1, token.group());
			try (ResultSet rows = statement.executeQuery()) {
				return rows.next()
						? new LeaseLock(false, rows.getString("holder"), rows.getLong("term"), rows.getBoolean("valid"))
						: null;
			}
		}));
	}

	@Override
	public @Nullable Fence advance(String resource, FencingToken token) {
		if (!this.created.contains(resource)) {
			// Created at the lowest term, which accepts every term of the group as no
			// fence does, in a transaction of its own: writers that race to create a
			// fence in their own transactions deadlock in InnoDB when one of them rolls
			// back, and the fence then fails a write that it would accept.
			this.connections.transaction("create fence", (tx) -> tx.run(this.sql.of(ENSURE_FENCE), (statement) -> {
				statement.setString(1, resource);
				statement.setString(2, token.group());
				statement.setLong(3, 1);
				return statement.executeUpdate();
			}));
			this.created.add(resource);
		}
		// The upsert locks the fence's row: the limits come first, and stay for the rest
		// of
		// the transaction even when the fence refuses the term, since the row stays
		// locked.
		execute("advance fence", this.sql.of(ENSURE_FENCE), (statement) -> {
			statement.setString(1, resource);
			statement.setString(2, token.group());
			statement.setLong(3, token.term());
			MariaDbHoldLimits.apply(statement.getConnection(), this.guards.holdLimitMillis());
			return statement.executeUpdate();
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
