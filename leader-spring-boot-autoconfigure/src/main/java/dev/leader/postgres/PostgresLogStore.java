package dev.leader.postgres;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;

import javax.sql.DataSource;

import dev.leader.FencingToken;
import dev.leader.jdbc.LogRows;
import dev.leader.jdbc.OwnConnections;
import dev.leader.jdbc.Statements;
import dev.leader.jdbc.TablePrefix;
import dev.leader.log.Bookmark;
import dev.leader.log.LogEntry;
import dev.leader.log.LogStore;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.dao.PessimisticLockingFailureException;
import org.springframework.jdbc.datasource.DataSourceUtils;

/**
 * {@link LogStore} on PostgreSQL. An append joins the Spring-managed transaction bound to
 * the data source when there is one, and otherwise commits by itself on a connection set
 * up as the other stores' are, in one transaction with the appends that other threads of
 * the node make to the group meanwhile ({@link AppendBatches}). Appends are announced
 * with {@code NOTIFY} on the channel {@code <prefix>appended}, which PostgreSQL delivers
 * only once the append commits, on the listening connection of the node's
 * {@link PostgresCoordinationStore}, whose heartbeat also reads the last index of each
 * group it takes part in: a node that missed a notification catches up within a renew
 * interval, and an idle log costs no statement.
 * <p>
 * An append that joins a caller's transaction at {@code REPEATABLE READ} or
 * {@code SERIALIZABLE} fails with a {@link PessimisticLockingFailureException} when
 * another append to the group committed after that transaction's snapshot: the caller
 * runs its transaction again. One whose commit PostgreSQL reports with a warning (a
 * cancelled wait for a synchronous standby) fails, or fails the caller's commit, with a
 * {@link org.springframework.dao.DataAccessResourceFailureException}: the entry is on the
 * primary alone.
 * <p>
 * Built by {@link PostgresStoreFamily} unless the application defines its own store.
 */
public final class PostgresLogStore implements LogStore {

	private static final Log logger = LogFactory.getLog(PostgresLogStore.class);

	private static final String SERIALIZATION_FAILURE = "40001";

	/**
	 * Appends entries, one or an {@linkplain AppendBatches batch}, which take consecutive
	 * indexes in their order, all or none of them. The lease row is locked as the lease
	 * guard locks it (FOR KEY SHARE, only if this node holds it with this term,
	 * unexpired, in the server's current epoch), with the guard's hold limits on the rest
	 * of the transaction. The head row's upsert takes the next index and holds its row
	 * lock until the transaction ends, which orders the group's appends; it refuses a
	 * term lower than the last entry's. The transaction's commit is made
	 * {@linkplain Statements#DURABLE durable}: followers apply an entry once notified, so
	 * an entry lost in a crash of the database after that would let the leader append
	 * another at its index, under the same term, which no bookmark could tell apart. A
	 * commit that PostgreSQL reports with a warning, as it does when the commit's wait
	 * for a synchronous standby is cancelled, is on the primary alone: it fails the
	 * append ({@code Statements.requireDurable}) when the statement commits by itself,
	 * and the caller's commit ({@link DurableCommitCheck}) when it joins the caller's
	 * transaction. The notification, of the last index, is sent when the transaction
	 * commits (once: the same payload is sent once a transaction). A refused append reads
	 * the lease as it stands, and the log's last term, for the message.
	 */
	private static final String APPEND = """
			WITH lease AS (
			  SELECT l.term, ${hold_limits} AS limits FROM ${prefix}leases l, ${hold}, (SELECT ${durable}) AS durable
			  WHERE l.group_name = ? AND l.holder = ? AND l.term = ? AND l.expires_at > clock_timestamp()
			    AND l.term > (SELECT ${epoch_base})
			  FOR KEY SHARE OF l
			), head AS (
			  INSERT INTO ${prefix}log_heads AS h (group_name, last_index, last_term, appended_at)
			  SELECT ?, ?, term, clock_timestamp() FROM lease
			  ON CONFLICT (group_name) DO UPDATE SET last_index = h.last_index + excluded.last_index,
			    last_term = excluded.last_term, appended_at = excluded.appended_at
			  WHERE h.last_term <= excluded.last_term
			  RETURNING h.last_index, h.last_term, h.appended_at
			), entry AS (
			  INSERT INTO ${prefix}log_entries (group_name, log_index, term, type, payload, appended_at)
			  SELECT ?, h.last_index - ? + e.n, h.last_term, e.type, e.payload, h.appended_at
			  FROM head h CROSS JOIN unnest(?::text[], ?::text[]) WITH ORDINALITY AS e(type, payload, n)
			  RETURNING log_index, term
			)
			SELECT true AS appended, e.log_index, e.term, NULL AS holder
			FROM entry e CROSS JOIN LATERAL (SELECT pg_notify(?, ? || ' ' || h.last_index) FROM head h
			  WHERE e.log_index > 0) AS notified
			UNION ALL
			SELECT false, NULL, greatest(l.term, (SELECT max(last_term) FROM ${prefix}log_heads WHERE group_name = ?)),
			  l.holder
			FROM ${prefix}leases l WHERE l.group_name = ? AND NOT EXISTS (SELECT 1 FROM entry)
			""";

	private static final String READ = """
			SELECT log_index, term, type, payload, appended_at FROM ${prefix}log_entries
			WHERE group_name = ? AND log_index > ? ORDER BY log_index LIMIT ?
			""";

	private static final String HEAD = """
			SELECT last_index, last_term FROM ${prefix}log_heads WHERE group_name = ?
			""";

	/**
	 * The log's end and the lowest term an append may still go under: the end's term, and
	 * the first term of the server's epoch, since a term of an epoch before the last
	 * promotion appends nothing.
	 */
	private static final String APPENDABLE = """
			SELECT coalesce(h.last_index, 0) AS last_index, coalesce(h.last_term, 0) AS last_term,
			  greatest(coalesce(h.last_term, 0), (SELECT ${epoch_base}) + 1) AS lowest_term
			FROM (SELECT 1) AS one LEFT JOIN ${prefix}log_heads h ON h.group_name = ?
			""";

	/**
	 * Removes a bounded batch from the start of a group's log, fenced as an append is
	 * (the lease row locked FOR KEY SHARE, only if this node holds it with this term,
	 * unexpired, in the server's current epoch). The cut is the higher of the count and
	 * the age limits, never the last entry, so that the log's end stays readable, and
	 * never an entry after the one the leader applied, which the log must still hold with
	 * the term it was applied with: a leader that applied entries that a failover lost
	 * removes nothing before its tail has rewound past them. The last entry removed is
	 * recorded in the starts table in the same statement; the head row, which orders
	 * appends, is only read.
	 */
	private static final String TRUNCATE = """
			WITH lease AS (
			  SELECT l.term FROM ${prefix}leases l
			  WHERE l.group_name = ? AND l.holder = ? AND l.term = ? AND l.expires_at > clock_timestamp()
			    AND l.term > (SELECT ${epoch_base})
			  FOR KEY SHARE OF l
			), cut AS (
			  SELECT least(h.last_index - 1, ?, greatest(h.last_index - ?,
			    coalesce((SELECT max(e.log_index) FROM ${prefix}log_entries e WHERE e.group_name = h.group_name
			      AND e.appended_at < clock_timestamp() - ? * interval '1 millisecond'), 0))) AS through_index
			  FROM ${prefix}log_heads h CROSS JOIN lease WHERE h.group_name = ?
			    AND EXISTS (SELECT 1 FROM ${prefix}log_entries a WHERE a.group_name = h.group_name
			      AND a.log_index = ? AND a.term = ?)
			), doomed AS (
			  SELECT e.log_index FROM ${prefix}log_entries e CROSS JOIN cut
			  WHERE e.group_name = ? AND e.log_index <= cut.through_index ORDER BY e.log_index LIMIT ?
			), gone AS (
			  DELETE FROM ${prefix}log_entries e USING doomed d WHERE e.group_name = ? AND e.log_index = d.log_index
			  RETURNING e.log_index, e.term
			), last AS (
			  SELECT log_index, term FROM gone ORDER BY log_index DESC LIMIT 1
			), moved AS (
			  INSERT INTO ${prefix}log_starts AS s (group_name, truncated_index, truncated_term, truncated_at)
			  SELECT ?, log_index, term, clock_timestamp() FROM last
			  ON CONFLICT (group_name) DO UPDATE SET truncated_index = excluded.truncated_index,
			    truncated_term = excluded.truncated_term, truncated_at = excluded.truncated_at
			  WHERE s.truncated_index < excluded.truncated_index
			  RETURNING 1
			)
			SELECT EXISTS (SELECT 1 FROM lease) AS allowed, (SELECT count(*) FROM gone) AS removed,
			  (SELECT log_index FROM last) AS through_index, (SELECT term FROM last) AS through_term,
			  (SELECT count(*) FROM moved) AS moved
			""";

	private static final String TRUNCATED = """
			SELECT truncated_index, truncated_term FROM ${prefix}log_starts WHERE group_name = ?
			""";

	private final DataSource dataSource;

	private final OwnConnections connections;

	private final Statements statements;

	private final long holdLimitMillis;

	private final String channel;

	private final @Nullable PostgresCoordinationStore notifications;

	private final String appendSql;

	private final AppendBatches batches = new AppendBatches(this::appendBatch);

	private final String readSql;

	private final String headSql;

	private final String appendableSql;

	private final String truncateSql;

	private final String truncatedSql;

	/**
	 * Creates a store.
	 * @param dataSource the application's data source
	 * @param tablePrefix the prefix of the starter's tables
	 * @param queryTimeout the longest a statement may run
	 * @param holdLimit the longest the rest of an appending transaction may stay idle,
	 * and each of its later statements may run, while it holds the lease row's lock, as
	 * {@link PostgresFencingStore}'s guard limits it
	 * @param notifications the node's coordination store, whose listening connection
	 * follows the append notifications, or {@code null} for none
	 */
	public PostgresLogStore(DataSource dataSource, TablePrefix tablePrefix, Duration queryTimeout, Duration holdLimit,
			@Nullable PostgresCoordinationStore notifications) {
		this.dataSource = dataSource;
		this.connections = new OwnConnections(dataSource);
		this.statements = new Statements(queryTimeout);
		this.holdLimitMillis = Math.max(1, holdLimit.toMillis());
		this.channel = tablePrefix.channel("appended");
		this.notifications = notifications;
		this.appendSql = tablePrefix.render(APPEND);
		this.readSql = tablePrefix.render(READ);
		this.headSql = tablePrefix.render(HEAD);
		this.appendableSql = tablePrefix.render(APPENDABLE);
		this.truncateSql = tablePrefix.render(TRUNCATE);
		this.truncatedSql = tablePrefix.render(TRUNCATED);
	}

	@Override
	public Appended append(FencingToken token, String nodeId, String type, String payload) {
		AppendBatches.Entry entry = new AppendBatches.Entry(type, payload);
		if (Statements.inTransaction(this.dataSource)) {
			Connection connection = DataSourceUtils.getConnection(this.dataSource);
			try {
				Appended appended = this.statements
					.run(connection, "append to the log", this.appendSql,
							appendCall(token, nodeId, List.of(entry), true))
					.get(0);
				if (appended.entry() != null) {
					DurableCommitCheck.register(connection, List.of(appended.entry()));
				}
				return appended;
			}
			finally {
				DataSourceUtils.releaseConnection(connection, this.dataSource);
			}
		}
		return this.batches.append(token, nodeId, entry);
	}

	/**
	 * Appends a batch of entries in one transaction of its own.
	 * @param token the token of the appending leader
	 * @param nodeId the node that must hold the lease
	 * @param entries the entries, at least one
	 * @return the outcome of each entry, in their order
	 */
	List<Appended> appendBatch(FencingToken token, String nodeId, List<AppendBatches.Entry> entries) {
		return onOwnConnection("append to the log", this.appendSql, appendCall(token, nodeId, entries, false));
	}

	/**
	 * Runs the append statement.
	 * @param token the token of the appending leader
	 * @param nodeId the node that must hold the lease
	 * @param entries the entries, at least one
	 * @param joined whether the statement joins the caller's transaction, which commits
	 * later, or commits by itself and must then be known to be durable
	 * @return the callback
	 */
	private Statements.Callback<List<Appended>> appendCall(FencingToken token, String nodeId,
			List<AppendBatches.Entry> entries, boolean joined) {
		return (statement) -> {
			Connection connection = statement.getConnection();
			statement.setLong(1, this.holdLimitMillis);
			statement.setString(2, token.group());
			statement.setString(3, nodeId);
			statement.setLong(4, token.term());
			statement.setString(5, token.group());
			statement.setInt(6, entries.size());
			statement.setString(7, token.group());
			statement.setInt(8, entries.size());
			statement.setArray(9,
					connection.createArrayOf("text", entries.stream().map(AppendBatches.Entry::type).toArray()));
			statement.setArray(10,
					connection.createArrayOf("text", entries.stream().map(AppendBatches.Entry::payload).toArray()));
			statement.setString(11, this.channel);
			statement.setString(12, token.group());
			statement.setString(13, token.group());
			statement.setString(14, token.group());
			List<Bookmark> appended = new ArrayList<>();
			try (ResultSet rows = executeAppend(statement, token, joined)) {
				if (!joined) {
					Statements.requireDurable(statement);
				}
				while (rows.next()) {
					if (!rows.getBoolean("appended")) {
						return Collections.nCopies(entries.size(),
								new Appended(null, rows.getString("holder"), rows.getLong("term")));
					}
					appended.add(new Bookmark(token.group(), rows.getLong("term"), rows.getLong("log_index")));
				}
			}
			if (appended.isEmpty()) {
				return Collections.nCopies(entries.size(), new Appended(null, null, 0));
			}
			// The entries took consecutive indexes in their order.
			appended.sort(Comparator.comparingLong(Bookmark::index));
			return appended.stream().map((entry) -> new Appended(entry, null, entry.term())).toList();
		};
	}

	/**
	 * Executes the append statement. In a caller's transaction at {@code REPEATABLE READ}
	 * or {@code SERIALIZABLE}, the head row's update fails with a serialization failure
	 * (SQLState {@code 40001}) when another append to the group committed after the
	 * transaction's snapshot was taken: the transaction cannot see that append's index,
	 * so it cannot take the next one, and PostgreSQL refuses to update a row changed
	 * since the snapshot. That fails the caller's transaction, which must roll back and
	 * run again, as for any serialization failure: the exception says so, and is a
	 * {@link PessimisticLockingFailureException}, a {@code ConcurrencyFailureException}
	 * and {@code TransientDataAccessException} that retry rules recognise.
	 * @param statement the append statement, its parameters set
	 * @param token the token of the appending leader, for the message
	 * @param joined whether the statement joins the caller's transaction
	 * @return the statement's rows
	 * @throws SQLException if the statement fails otherwise
	 */
	private static ResultSet executeAppend(PreparedStatement statement, FencingToken token, boolean joined)
			throws SQLException {
		try {
			return statement.executeQuery();
		}
		catch (SQLException ex) {
			if (joined && SERIALIZATION_FAILURE.equals(ex.getSQLState())) {
				throw new PessimisticLockingFailureException("Could not append to the log of group " + token.group()
						+ " in the caller's transaction, which PostgreSQL could not serialize with a concurrent one "
						+ "(at REPEATABLE READ or SERIALIZABLE, any append to the group that committed after this "
						+ "transaction's snapshot was taken does that). Roll the transaction back and run it again "
						+ "(for example with a retry on ConcurrencyFailureException, with a random back-off), or run it at READ COMMITTED; "
						+ ex.getMessage(), ex);
			}
			throw ex;
		}
	}

	@Override
	public List<LogEntry> read(String group, long afterIndex, int limit) {
		return onOwnConnection("read the log", this.readSql,
				LogRows.read(group, afterIndex, limit, Statements::instant));
	}

	@Override
	public Bookmark head(String group) {
		return onOwnConnection("read the log's head", this.headSql, LogRows.head(group));
	}

	@Override
	public Appendable appendable(String group) {
		return onOwnConnection("read the log's head", this.appendableSql, (statement) -> {
			statement.setString(1, group);
			try (ResultSet rows = statement.executeQuery()) {
				rows.next();
				return new Appendable(new Bookmark(group, rows.getLong("last_term"), rows.getLong("last_index")),
						rows.getLong("lowest_term"));
			}
		});
	}

	@Override
	public boolean supportsRetention() {
		return true;
	}

	@Override
	public Truncated truncate(FencingToken token, String nodeId, long keepEntries, @Nullable Duration maxAge,
			Bookmark applied, int limit) {
		return onOwnConnection("truncate the log", this.truncateSql, (statement) -> {
			statement.setString(1, token.group());
			statement.setString(2, nodeId);
			statement.setLong(3, token.term());
			statement.setLong(4, applied.index());
			statement.setLong(5, keepEntries);
			if (maxAge != null) {
				statement.setLong(6, maxAge.toMillis());
			}
			else {
				statement.setNull(6, Types.BIGINT);
			}
			statement.setString(7, token.group());
			statement.setLong(8, applied.index());
			statement.setLong(9, applied.term());
			statement.setString(10, token.group());
			statement.setInt(11, limit);
			statement.setString(12, token.group());
			statement.setString(13, token.group());
			try (ResultSet rows = statement.executeQuery()) {
				rows.next();
				long through = rows.getLong("through_index");
				Bookmark last = rows.wasNull() ? null
						: new Bookmark(token.group(), rows.getLong("through_term"), through);
				return new Truncated(rows.getBoolean("allowed"), rows.getInt("removed"), last);
			}
		});
	}

	@Override
	public Bookmark truncated(String group) {
		return onOwnConnection("read where the log was truncated", this.truncatedSql, (statement) -> {
			statement.setString(1, group);
			try (ResultSet rows = statement.executeQuery()) {
				return rows.next()
						? new Bookmark(group, rows.getLong("truncated_term"), rows.getLong("truncated_index"))
						: new Bookmark(group, 0, 0);
			}
		});
	}

	@Override
	public AutoCloseable listen(LogListener listener) {
		if (this.notifications == null) {
			return LogStore.super.listen(listener);
		}
		AutoCloseable heads = this.notifications
			.followLogHeads((ends, sentAt) -> ends.values().forEach((end) -> listener.confirmed(end, sentAt)));
		AutoCloseable appends = this.notifications.subscribe(this.channel, (payload) -> {
			int space = payload.lastIndexOf(' ');
			long index;
			try {
				index = Long.parseLong(payload.substring(space + 1));
			}
			catch (RuntimeException ex) {
				logger.debug("Ignored a log notification that is not <group> <index>: " + payload);
				return;
			}
			listener.appended(payload.substring(0, space), index);
		});
		return () -> {
			heads.close();
			appends.close();
		};
	}

	private <T> T onOwnConnection(String task, String sql, Statements.Callback<T> callback) {
		return this.connections.run(this.statements, task, sql, callback);
	}

}
