package dev.leader.mariadb;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.LocalDateTime;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import javax.sql.DataSource;

import dev.leader.FencingToken;
import dev.leader.jdbc.LogRows;
import dev.leader.jdbc.Statements;
import dev.leader.jdbc.TablePrefix;
import dev.leader.log.Bookmark;
import dev.leader.log.LogEntry;
import dev.leader.log.LogStore;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * {@link LogStore} on MariaDB 10.11 and later, with the guarantees of
 * {@code PostgresLogStore}: an append is fenced by the holder's term in its own
 * transaction, indexes have no gap and commit in index order, and a stale or lower term
 * writes nothing. An append joins the Spring-managed transaction bound to the data source
 * when there is one, whatever its isolation level, and otherwise commits by itself
 * ({@link MariaDbConnections}).
 * <p>
 * <b>Locks.</b> An append locks the group's {@code lease_terms} row in share mode, as
 * {@link MariaDbFencingStore}'s guard does, so the holder's renewal, which updates only
 * the {@code leases} row, is never held up, while a takeover or a release waits for the
 * appending transaction. It then takes the next index on the group's {@code log_heads}
 * row, whose exclusive lock it holds until its transaction ends: that orders the group's
 * appends, and an append that rolls back gives its index to the next. The grant of the
 * lease creates that row empty, so appends update it and never insert it: concurrent
 * inserts of one key deadlock in InnoDB when the first inserter rolls back. Joining a
 * transaction, it limits the rest of it as the guard does ({@link MariaDbHoldLimits}),
 * from before it takes the lock.
 * <p>
 * <b>Without notifications.</b> MariaDB has no {@code LISTEN/NOTIFY}. The appends made
 * through this store are told to its own listeners once they commit, so a leader's own
 * node applies them at once; other nodes learn of them from the last index of each group
 * that {@link MariaDbCoordinationStore}'s heartbeat reads with the group's lease, within
 * a renew interval and without a statement of their own, or at once from a read-index
 * read.
 * <p>
 * <b>Durability</b> is the server's ({@code innodb_flush_log_at_trx_commit}, and
 * {@code sync_binlog} with the binary log on, which the coordination store checks at
 * startup): MariaDB cannot make one transaction's commit durable on its own, as
 * PostgreSQL's store does.
 * <p>
 * Built by {@link MariaDbStoreFamily} when the data source leads to MariaDB, unless the
 * application defines its own store. Public so that a node can also be built without a
 * Spring context.
 */
public final class MariaDbLogStore implements LogStore {

	private static final Log logger = LogFactory.getLog(MariaDbLogStore.class);

	/**
	 * Takes the next index, unless an entry of a higher term has been appended. The
	 * assignments run left to right on the row's old values until {@code last_term},
	 * which comes last. The count of affected rows depends on the connection's flags, so
	 * the outcome is read back by {@link #READ_HEAD}.
	 */
	private static final String TAKE_INDEX = """
			INSERT INTO ${prefix}log_heads (group_name, last_index, last_term, appended_at) VALUES (?, 1, ?, ${now})
			ON DUPLICATE KEY UPDATE
			  appended_at = IF(last_term <= VALUES(last_term), VALUES(appended_at), appended_at),
			  last_index = IF(last_term <= VALUES(last_term), last_index + 1, last_index),
			  last_term = GREATEST(last_term, VALUES(last_term))""";

	/**
	 * The head as this transaction left it: a locking read, which reads the latest
	 * version whatever the transaction's isolation level; the lock is already held.
	 */
	private static final String READ_HEAD = """
			SELECT last_index, last_term, appended_at FROM ${prefix}log_heads WHERE group_name = ? FOR UPDATE""";

	private static final String INSERT_ENTRY = """
			INSERT INTO ${prefix}log_entries (group_name, log_index, term, type, payload, appended_at)
			VALUES (?, ?, ?, ?, ?, ?)""";

	/**
	 * The lease as it stands and the log's last term, for the outcome of a refused
	 * append.
	 */
	private static final String REFUSED = """
			SELECT l.holder, GREATEST(l.term, COALESCE((SELECT h.last_term FROM ${prefix}log_heads h
			  WHERE h.group_name = l.group_name), 0)) AS term
			FROM ${prefix}leases l WHERE l.group_name = ?""";

	private static final String READ = """
			SELECT log_index, term, type, payload, appended_at FROM ${prefix}log_entries
			WHERE group_name = ? AND log_index > ? ORDER BY log_index LIMIT ?""";

	private static final String HEAD = "SELECT last_index, last_term FROM ${prefix}log_heads WHERE group_name = ?";

	private final DataSource dataSource;

	private final MariaDbConnections connections;

	private final long holdLimitMillis;

	private final @Nullable MariaDbCoordinationStore heartbeat;

	private final List<LogListener> listeners = new CopyOnWriteArrayList<>();

	private final MariaDbSql.Rendered sql;

	/**
	 * Creates a store.
	 * @param dataSource the MariaDB data source
	 * @param tablePrefix the prefix of the starter's tables
	 * @param queryTimeout the longest a statement may run, including the wait for a row
	 * lock; rounded up to whole seconds
	 * @param holdLimit the longest each later statement of an appending transaction that
	 * the store joined may run, and the longest it may stay idle, while it holds the
	 * locks, as {@link MariaDbFencingStore}'s guard limits it
	 * @param heartbeat the node's coordination store, whose heartbeat reads the last
	 * index of each group's log, and whose grants and renewals tell an append that joins
	 * a transaction the expiry of the node's terms, as they tell
	 * {@link MariaDbFencingStore}'s guard; or {@code null} for none
	 */
	public MariaDbLogStore(DataSource dataSource, TablePrefix tablePrefix, Duration queryTimeout, Duration holdLimit,
			@Nullable MariaDbCoordinationStore heartbeat) {
		this.dataSource = dataSource;
		this.connections = new MariaDbConnections(dataSource, queryTimeout);
		this.holdLimitMillis = Math.max(1, holdLimit.toMillis());
		this.heartbeat = heartbeat;
		this.sql = MariaDbSql.renderAll(tablePrefix, MariaDbSql.LOCK_LEASE, MariaDbSql.LOCK_LEASE_BEFORE, TAKE_INDEX,
				READ_HEAD, INSERT_ENTRY, REFUSED, READ, HEAD);
	}

	/**
	 * Appends an entry in four statements of one transaction: locks the lease guard's
	 * row, takes the next index on the head row, reads it back, and inserts the entry.
	 */
	@Override
	public Appended append(FencingToken token, String nodeId, String type, String payload) {
		if (Statements.inTransaction(this.dataSource)) {
			Connection connection = DataSourceUtils.getConnection(this.dataSource);
			try {
				Appended appended = append(connection, true, token, nodeId, type, payload);
				Bookmark entry = appended.entry();
				if (entry != null && TransactionSynchronizationManager.isSynchronizationActive()) {
					TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {

						@Override
						public void afterCommit() {
							appended(entry);
						}

					});
				}
				return appended;
			}
			catch (SQLException ex) {
				throw Statements.translate("append to the log", ex);
			}
			finally {
				DataSourceUtils.releaseConnection(connection, this.dataSource);
			}
		}
		Appended appended = this.connections.transaction("append to the log",
				(tx) -> append(tx.connection(), false, token, nodeId, type, payload));
		Bookmark entry = appended.entry();
		if (entry != null) {
			appended(entry);
		}
		return appended;
	}

	private Appended append(Connection connection, boolean joined, FencingToken token, String nodeId, String type,
			String payload) throws SQLException {
		int timeout = this.connections.statements().timeoutSeconds();
		// Before the lock, so that the joined transaction never holds it unlimited.
		if (joined) {
			MariaDbHoldLimits.apply(connection, this.holdLimitMillis);
		}
		// In the caller's transaction, the guard compares with the expiry the heartbeat
		// saw rather than reading the lease row, which SERIALIZABLE would lock.
		LocalDateTime expiry = (joined && this.heartbeat != null) ? this.heartbeat.expiry(token.group(), token.term())
				: null;
		boolean locked;
		try (PreparedStatement statement = prepare(connection, this.sql.of(MariaDbSql.lockLease(expiry)), timeout)) {
			locked = MariaDbSql.lockLease(statement, expiry, token, nodeId) == MariaDbSql.LeaseGuard.LOCKED;
		}
		if (!locked) {
			// The limits stay: the guard's key lookup may have locked the row.
			return joined ? refused(token) : refused(connection, token, timeout);
		}
		try (PreparedStatement statement = prepare(connection, this.sql.of(TAKE_INDEX), timeout)) {
			statement.setString(1, token.group());
			statement.setLong(2, token.term());
			statement.executeUpdate();
		}
		long index;
		LocalDateTime appendedAt;
		try (PreparedStatement statement = prepare(connection, this.sql.of(READ_HEAD), timeout)) {
			statement.setString(1, token.group());
			try (ResultSet rows = statement.executeQuery()) {
				rows.next();
				if (rows.getLong("last_term") != token.term()) {
					// A higher term has appended: the head is unchanged, nothing written.
					return joined ? refused(token) : refused(connection, token, timeout);
				}
				index = rows.getLong("last_index");
				appendedAt = rows.getObject("appended_at", LocalDateTime.class);
			}
		}
		try (PreparedStatement statement = prepare(connection, this.sql.of(INSERT_ENTRY), timeout)) {
			statement.setString(1, token.group());
			statement.setLong(2, index);
			statement.setLong(3, token.term());
			statement.setString(4, type);
			statement.setString(5, payload);
			MariaDbConnections.setTime(statement, 6, appendedAt);
			statement.executeUpdate();
		}
		return new Appended(new Bookmark(token.group(), token.term(), index), null, token.term());
	}

	// For the message of a refusal in the caller's transaction, in a transaction of the
	// starter's own: in the caller's, at SERIALIZABLE, the read would lock the lease and
	// head rows that the holder renews and appends to.
	private Appended refused(FencingToken token) {
		return this.connections.transaction("read the lease",
				(tx) -> refused(tx.connection(), token, this.connections.statements().timeoutSeconds()));
	}

	private Appended refused(Connection connection, FencingToken token, int timeout) throws SQLException {
		try (PreparedStatement statement = prepare(connection, this.sql.of(REFUSED), timeout)) {
			statement.setString(1, token.group());
			try (ResultSet rows = statement.executeQuery()) {
				return rows.next() ? new Appended(null, rows.getString("holder"), rows.getLong("term"))
						: new Appended(null, null, 0);
			}
		}
	}

	private static PreparedStatement prepare(Connection connection, String sql, int timeout) throws SQLException {
		PreparedStatement statement = connection.prepareStatement(sql);
		statement.setQueryTimeout(timeout);
		return statement;
	}

	private void appended(Bookmark entry) {
		for (LogListener listener : this.listeners) {
			try {
				listener.appended(entry.group(), entry.index());
			}
			catch (RuntimeException ex) {
				logger.warn("Log listener failed on a committed append; the heartbeat catches it up: " + ex);
			}
		}
	}

	@Override
	public List<LogEntry> read(String group, long afterIndex, int limit) {
		return this.connections.transaction("read the log",
				(tx) -> tx.run(this.sql.of(READ), LogRows.read(group, afterIndex, limit, MariaDbConnections::instant)));
	}

	@Override
	public Bookmark head(String group) {
		return this.connections.transaction("read the log's head",
				(tx) -> tx.run(this.sql.of(HEAD), LogRows.head(group)));
	}

	/**
	 * Tells the listener of the appends committed through this store, on the appending
	 * thread once the append commits, and of the last indexes that the coordination
	 * store's heartbeat reads, on the heartbeat's thread.
	 */
	@Override
	public AutoCloseable listen(LogListener listener) {
		this.listeners.add(listener);
		AutoCloseable heads = (this.heartbeat != null) ? this.heartbeat
			.followLogHeads((ends, sentAt) -> ends.values().forEach((end) -> listener.confirmed(end, sentAt))) : () -> {
			};
		return () -> {
			this.listeners.remove(listener);
			heads.close();
		};
	}

}
