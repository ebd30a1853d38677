package dev.leader.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.function.Consumer;

import javax.sql.DataSource;

import dev.leader.FencingToken;
import dev.leader.daemon.Assignment;
import dev.leader.daemon.AssignmentState;
import dev.leader.daemon.DaemonRequest;
import dev.leader.daemon.DaemonSnapshot;
import dev.leader.daemon.DaemonStore;
import org.jspecify.annotations.Nullable;

/**
 * {@link DaemonStore} on PostgreSQL. Each transition is one statement that compares and sets the daemon's generation
 * and state; the leader's statements also lock the lease row {@code FOR KEY SHARE} and change nothing unless the leader
 * still holds it with its term, unexpired by {@code clock_timestamp()}. A takeover of the lease therefore waits for
 * the statement, and a deposed leader's statement finds no lease to match.
 * <p>
 * Every statement that changes something also sends {@code NOTIFY} on the channel {@code <prefix>assignments}, sent
 * only if it commits: with the node id as payload when the leader changed that node's assignment, and with an empty
 * payload, meant for the leader, when a node acknowledged or handed back an assignment or an operator recorded a
 * request. {@link #listen} follows the channel on the release-listening connection of a
 * {@link PostgresCoordinationStore}, so a node needs no second connection for it.
 * <p>
 * With that store, polling costs no statement either: {@link #followHeartbeat} makes the node's heartbeat statement
 * read the nodes, assignments and requests too, so a node sends one statement per renew interval whatever its
 * daemons.
 */
public final class PostgresDaemonStore implements DaemonStore {

	private static final String ASSIGNMENT_COLUMNS = "daemon_name, node_id, state, generation, term, state_since";

	private final DataSource dataSource;

	private final OwnConnections connections;

	private final Statements statements;

	private final String readSql;

	private final String assignSql;

	private final String revokeSql;

	private final String reclaimSql;

	private final String acknowledgeSql;

	private final String releaseSql;

	private final String lockSql;

	private final String requestSql;

	private final String drainSql;

	private final String forgetSql;

	private final String channel;

	private final @Nullable PostgresCoordinationStore coordination;

	private final long holdLimitMillis;

	/**
	 * Creates a store.
	 * @param dataSource the PostgreSQL data source
	 * @param tablePrefix the prefix of the starter's tables
	 * @param queryTimeout the longest a statement may run; rounded up to whole seconds
	 * @param holdLimit the longest a transaction guarded by {@link #lock} may stay idle holding the assignment row;
	 * past it, the database ends the session, so that a node frozen inside the transaction cannot hold up the
	 * leader's reclaim of the daemon
	 */
	public PostgresDaemonStore(DataSource dataSource, TablePrefix tablePrefix, Duration queryTimeout,
			Duration holdLimit) {
		this(dataSource, tablePrefix, queryTimeout, holdLimit, null);
	}

	/**
	 * Creates a store that works with the node's coordination store: {@link #listen} follows the assignment
	 * notifications on its listening connection, and {@link #followHeartbeat} reads the snapshot in its heartbeat
	 * statement.
	 * @param dataSource the PostgreSQL data source
	 * @param tablePrefix the prefix of the starter's tables
	 * @param queryTimeout the longest a statement may run; rounded up to whole seconds
	 * @param holdLimit the longest a transaction guarded by {@link #lock} may stay idle holding the assignment row
	 * @param coordination the coordination store of the node's engine, on the same tables, or {@code null} to poll
	 * with statements of this store's own
	 */
	public PostgresDaemonStore(DataSource dataSource, TablePrefix tablePrefix, Duration queryTimeout,
			Duration holdLimit, @Nullable PostgresCoordinationStore coordination) {
		this.dataSource = dataSource;
		this.connections = new OwnConnections(dataSource);
		this.holdLimitMillis = Math.max(1, holdLimit.toMillis());
		this.coordination = coordination;
		this.statements = new Statements(queryTimeout);
		String p = tablePrefix.value();
		this.channel = p + "assignments";
		this.readSql = """
				SELECT 'N', node_id, NULL::varchar, NULL::bigint, NULL::timestamptz,
				       (extract(epoch from (clock_timestamp() - heartbeat_at)) * 1000)::bigint, NULL::varchar,
				       NULL::timestamptz, daemons, drained
				FROM %snodes
				UNION ALL
				""".formatted(p) + DaemonRows.assignmentsRequestsAndClock(p);
		// The leader's writes are guarded by its lease as the lease guard guards a transaction: FOR KEY SHARE, which a
		// takeover waits for and the leader's own renewal does not.
		String lease = """
				WITH lease AS (
				  SELECT 1 FROM %1$sleases
				  WHERE group_name = ? AND holder = ? AND term = ? AND expires_at > clock_timestamp()
				    AND term > (SELECT %2$s)
				  FOR KEY SHARE
				)
				""".formatted(p, Statements.EPOCH_BASE);
		// The move request an assignment carries out is deleted in the same statement, only if the assignment was made.
		// A generation is a fencing token too: like a term, it is at least the first of the server's epoch, so that it
		// rises across a promotion that lost the old primary's last assignments.
		this.assignSql = lease + """
				, assigned AS (
				  INSERT INTO %1$sassignments AS a (daemon_name, node_id, state, generation, term, assigned_at,
				    state_since)
				  SELECT ?, ?, 'ASSIGNING', (SELECT %2$s) + 1, ?, clock_timestamp(), clock_timestamp() FROM lease
				  ON CONFLICT (daemon_name) DO UPDATE SET node_id = excluded.node_id, state = 'ASSIGNING',
				    generation = greatest(a.generation + 1, excluded.generation), term = excluded.term,
				    assigned_at = excluded.assigned_at,
				    acked_at = NULL, revoking_at = NULL, deleted_at = NULL, state_since = excluded.state_since
				  WHERE a.state = 'DELETED' AND a.generation = ?
				  RETURNING a.generation, a.node_id
				), consumed AS (
				  DELETE FROM %1$sdaemon_requests
				  WHERE kind = 'MOVE' AND daemon_name = ? AND requested_at = ?::timestamptz
				    AND EXISTS (SELECT 1 FROM assigned)
				)
				SELECT generation, pg_notify(?, node_id) FROM assigned
				""".formatted(p, Statements.EPOCH_BASE);
		this.revokeSql = lease + """
				, changed AS (
				  UPDATE %1$sassignments SET state = 'REVOKING', term = ?, revoking_at = clock_timestamp(),
				    state_since = clock_timestamp()
				  WHERE daemon_name = ? AND generation = ? AND state IN ('ASSIGNING', 'ACTIVE')
				    AND EXISTS (SELECT 1 FROM lease)
				  RETURNING node_id
				)
				SELECT pg_notify(?, node_id) FROM changed
				""".formatted(p);
		// Ending an assignment (DELETED) locks its row FOR UPDATE first, which waits for the transactions that the
		// daemon guard locked FOR KEY SHARE; a revoke and an acknowledgement change neither node nor generation, and
		// wait for nothing.
		this.reclaimSql = lease + """
				, target AS (
				  SELECT daemon_name, ?::bigint AS term FROM %1$sassignments
				  WHERE daemon_name = ? AND generation = ? AND state <> 'DELETED' AND EXISTS (SELECT 1 FROM lease)
				  FOR UPDATE
				), changed AS (
				  UPDATE %1$sassignments a SET state = 'DELETED', term = target.term, deleted_at = clock_timestamp(),
				    state_since = clock_timestamp()
				  FROM target WHERE a.daemon_name = target.daemon_name
				  RETURNING a.node_id
				)
				SELECT pg_notify(?, node_id) FROM changed
				""".formatted(p);
		this.acknowledgeSql = """
				WITH changed AS (
				  UPDATE %1$sassignments SET state = 'ACTIVE', acked_at = clock_timestamp(),
				    state_since = clock_timestamp()
				  WHERE daemon_name = ? AND generation = ? AND node_id = ? AND state = 'ASSIGNING'
				  RETURNING node_id
				)
				SELECT pg_notify(?, '') FROM changed
				""".formatted(p);
		this.releaseSql = """
				WITH target AS (
				  SELECT daemon_name FROM %1$sassignments
				  WHERE daemon_name = ? AND generation = ? AND node_id = ? AND state <> 'DELETED'
				  FOR UPDATE
				), changed AS (
				  UPDATE %1$sassignments a SET state = 'DELETED', deleted_at = clock_timestamp(),
				    state_since = clock_timestamp()
				  FROM target WHERE a.daemon_name = target.daemon_name
				  RETURNING a.node_id
				)
				SELECT pg_notify(?, '') FROM changed
				""".formatted(p);
		this.requestSql = """
				WITH recorded AS (
				  INSERT INTO %1$sdaemon_requests (kind, daemon_name, node_id, requested_at)
				  VALUES (?, ?, ?, clock_timestamp())
				  ON CONFLICT (kind, daemon_name) DO UPDATE SET node_id = excluded.node_id,
				    requested_at = excluded.requested_at
				  RETURNING kind, daemon_name, node_id, requested_at
				)
				SELECT kind, daemon_name, node_id, requested_at, pg_notify(?, '') FROM recorded
				""".formatted(p);
		this.drainSql = """
				WITH changed AS (
				  UPDATE %1$snodes SET drained = ? WHERE node_id = ? RETURNING node_id
				)
				SELECT pg_notify(?, '') FROM changed
				""".formatted(p);
		this.forgetSql = lease + """
				, forgotten AS (
				  DELETE FROM %1$sdaemon_requests
				  WHERE kind = ? AND daemon_name = ? AND requested_at = ? AND EXISTS (SELECT 1 FROM lease)
				  RETURNING 1
				)
				SELECT count(*) FROM forgotten
				""".formatted(p);
		// The hold limits of the lease guard too: see PostgresFencingStore.
		this.lockSql = """
				SELECT %s, %s FROM %sassignments, %s WHERE daemon_name = ? FOR KEY SHARE OF %3$sassignments
				""".formatted(ASSIGNMENT_COLUMNS, Statements.HOLD_LIMITS, p, Statements.HOLD);
	}

	@Override
	public DaemonSnapshot read(Duration nodeExpiry) {
		return execute("read assignments", this.readSql, (statement) -> {
			DaemonRows read = new DaemonRows(nodeExpiry);
			try (ResultSet rows = statement.executeQuery()) {
				while (rows.next()) {
					read.add(rows);
				}
			}
			return read.snapshot();
		});
	}

	@Override
	public long assign(FencingToken leader, String leaderNode, String daemon, String node, long deletedGeneration,
			@Nullable Instant requestedAt) {
		return execute("assign daemon", this.assignSql, (statement) -> {
			int i = leaseParameters(statement, leader, leaderNode);
			statement.setString(++i, daemon);
			statement.setString(++i, node);
			statement.setLong(++i, leader.term());
			statement.setLong(++i, deletedGeneration);
			statement.setString(++i, daemon);
			statement.setObject(++i, timestamp(requestedAt));
			statement.setString(++i, this.channel);
			try (ResultSet rows = statement.executeQuery()) {
				return rows.next() ? rows.getLong(1) : 0L;
			}
		});
	}

	@Override
	public boolean revoke(FencingToken leader, String leaderNode, String daemon, long generation) {
		return leaderUpdate("revoke daemon", this.revokeSql, leader, leaderNode, daemon, generation);
	}

	@Override
	public boolean reclaim(FencingToken leader, String leaderNode, String daemon, long generation) {
		return leaderUpdate("reclaim daemon", this.reclaimSql, leader, leaderNode, daemon, generation);
	}

	@Override
	public boolean acknowledge(String node, String daemon, long generation) {
		return nodeUpdate("acknowledge daemon", this.acknowledgeSql, node, daemon, generation);
	}

	@Override
	public boolean release(String node, String daemon, long generation) {
		return nodeUpdate("release daemon", this.releaseSql, node, daemon, generation);
	}

	@Override
	public DaemonRequest request(DaemonRequest.Kind kind, String daemon, @Nullable String node) {
		return execute("record daemon request", this.requestSql, (statement) -> {
			statement.setString(1, kind.name());
			statement.setString(2, daemon);
			statement.setString(3, node);
			statement.setString(4, this.channel);
			try (ResultSet rows = statement.executeQuery()) {
				rows.next();
				return new DaemonRequest(kind, rows.getString(2), rows.getString(3), Statements.instant(rows, 4));
			}
		});
	}

	@Override
	public boolean drain(String node, boolean drained) {
		return execute("drain node", this.drainSql, (statement) -> {
			statement.setBoolean(1, drained);
			statement.setString(2, node);
			statement.setString(3, this.channel);
			try (ResultSet rows = statement.executeQuery()) {
				return rows.next();
			}
		});
	}

	@Override
	public boolean forget(FencingToken leader, String leaderNode, DaemonRequest request) {
		return execute("forget daemon request", this.forgetSql, (statement) -> {
			int i = leaseParameters(statement, leader, leaderNode);
			statement.setString(++i, request.kind().name());
			statement.setString(++i, request.daemon());
			statement.setObject(++i, timestamp(request.requestedAt()));
			try (ResultSet rows = statement.executeQuery()) {
				return rows.next() && rows.getLong(1) == 1;
			}
		});
	}

	@Override
	public AutoCloseable listen(Consumer<String> listener) {
		return (this.coordination != null) ? this.coordination.subscribe(this.channel, listener) : () -> {
		};
	}

	@Override
	public @Nullable AutoCloseable followHeartbeat(Consumer<DaemonSnapshot> follower) {
		return (this.coordination != null) ? this.coordination.readDaemonsWithHeartbeat(follower) : null;
	}

	@Override
	public @Nullable Assignment lock(String daemon) {
		return this.statements.runInTransaction(this.dataSource,
				"call DaemonContext.guard() inside a @Transactional method", "lock assignment", this.lockSql,
				(statement) -> {
					statement.setLong(1, this.holdLimitMillis);
					statement.setString(2, daemon);
					try (ResultSet rows = statement.executeQuery()) {
						return rows.next() ? new Assignment(rows.getString(1), rows.getString(2),
								AssignmentState.valueOf(rows.getString(3)), rows.getLong(4), rows.getLong(5),
								Statements.instant(rows, 6)) : null;
					}
				});
	}

	private boolean leaderUpdate(String task, String sql, FencingToken leader, String leaderNode, String daemon,
			long generation) {
		return execute(task, sql, (statement) -> {
			int i = leaseParameters(statement, leader, leaderNode);
			statement.setLong(++i, leader.term());
			statement.setString(++i, daemon);
			statement.setLong(++i, generation);
			statement.setString(++i, this.channel);
			try (ResultSet rows = statement.executeQuery()) {
				return rows.next();
			}
		});
	}

	private boolean nodeUpdate(String task, String sql, String node, String daemon, long generation) {
		return execute(task, sql, (statement) -> {
			statement.setString(1, daemon);
			statement.setLong(2, generation);
			statement.setString(3, node);
			statement.setString(4, this.channel);
			try (ResultSet rows = statement.executeQuery()) {
				return rows.next();
			}
		});
	}

	private static int leaseParameters(PreparedStatement statement, FencingToken leader, String leaderNode)
			throws SQLException {
		statement.setString(1, leader.group());
		statement.setString(2, leaderNode);
		statement.setLong(3, leader.term());
		return 3;
	}

	private <T> T execute(String task, String sql, Statements.Callback<T> callback) {
		Connection connection;
		try {
			connection = this.connections.borrow();
		}
		catch (SQLException ex) {
			throw Statements.translate(task, ex);
		}
		try {
			return this.statements.run(connection, task, sql, callback);
		}
		finally {
			this.connections.giveBack(connection);
		}
	}

	private static @Nullable OffsetDateTime timestamp(@Nullable Instant instant) {
		return (instant != null) ? instant.atOffset(java.time.ZoneOffset.UTC) : null;
	}

}
