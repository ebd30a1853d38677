package dev.leader.postgres;

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
import dev.leader.daemon.DaemonGuard;
import dev.leader.daemon.DaemonRequest;
import dev.leader.daemon.DaemonSnapshot;
import dev.leader.daemon.DaemonStore;
import dev.leader.jdbc.GuardStatements;
import dev.leader.jdbc.OwnConnections;
import dev.leader.jdbc.Statements;
import dev.leader.jdbc.TablePrefix;
import org.jspecify.annotations.Nullable;

/**
 * {@link DaemonStore} on PostgreSQL. Each transition is one statement that compares and
 * sets the daemon's generation and state; the leader's statements also lock the lease row
 * {@code FOR KEY SHARE} and change nothing unless the leader still holds it with its
 * term, unexpired by {@code clock_timestamp()}. A takeover of the lease therefore waits
 * for the statement, and a deposed leader's statement finds no lease to match.
 * <p>
 * Every statement that changes something also sends {@code NOTIFY} on the channel
 * {@code <prefix>assignments}, sent only if it commits: with the node id as payload when
 * the leader changed that node's assignment, and with an empty payload, meant for the
 * leader, when a node acknowledged or handed back an assignment or an operator recorded a
 * request. {@link #listen} follows the channel on the release-listening connection of a
 * {@link PostgresCoordinationStore}, so a node needs no second connection for it.
 * <p>
 * With that store, polling costs no statement either: {@link #followHeartbeat} makes the
 * node's heartbeat statement read the nodes, assignments and requests too, so a node
 * sends one statement per renew interval whatever its daemons.
 * <p>
 * The statements and why each is written the way it is are in {@link DaemonSql}.
 * <p>
 * Built by {@link PostgresStoreFamily} unless the application defines its own store.
 * Public so that a node can also be built without a Spring context, as the test kit, the
 * benchmarks and the multi-process tests do.
 */
public final class PostgresDaemonStore implements DaemonStore, DaemonGuard {

	private final OwnConnections connections;

	private final Statements statements;

	private final DaemonSql sql;

	private final String channel;

	private final @Nullable PostgresCoordinationStore coordination;

	private final GuardStatements guards;

	/**
	 * Creates a store.
	 * @param dataSource the PostgreSQL data source
	 * @param tablePrefix the prefix of the starter's tables
	 * @param queryTimeout the longest a statement may run; rounded up to whole seconds
	 * @param holdLimit the longest a transaction guarded by {@link #lock} may stay idle
	 * holding the assignment row; past it, the database ends the session, so that a node
	 * frozen inside the transaction cannot hold up the leader's reclaim of the daemon
	 */
	public PostgresDaemonStore(DataSource dataSource, TablePrefix tablePrefix, Duration queryTimeout,
			Duration holdLimit) {
		this(dataSource, tablePrefix, queryTimeout, holdLimit, null);
	}

	/**
	 * Creates a store that works with the node's coordination store: {@link #listen}
	 * follows the assignment notifications on its listening connection, and
	 * {@link #followHeartbeat} reads the snapshot in its heartbeat statement.
	 * @param dataSource the PostgreSQL data source
	 * @param tablePrefix the prefix of the starter's tables
	 * @param queryTimeout the longest a statement may run; rounded up to whole seconds
	 * @param holdLimit the longest a transaction guarded by {@link #lock} may stay idle
	 * holding the assignment row
	 * @param coordination the coordination store of the node's engine, on the same
	 * tables, or {@code null} to poll with statements of this store's own
	 */
	public PostgresDaemonStore(DataSource dataSource, TablePrefix tablePrefix, Duration queryTimeout,
			Duration holdLimit, @Nullable PostgresCoordinationStore coordination) {
		this.connections = new OwnConnections(dataSource);
		this.guards = new GuardStatements(dataSource, queryTimeout, holdLimit,
				"call DaemonContext.guard() inside a @Transactional method");
		this.coordination = coordination;
		this.statements = new Statements(queryTimeout);
		this.channel = tablePrefix.channel("assignments");
		this.sql = new DaemonSql(tablePrefix);
	}

	@Override
	public DaemonSnapshot read(Duration nodeExpiry) {
		return execute("read assignments", this.sql.read(), (statement) -> {
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
		return execute("assign daemon", this.sql.assign(), (statement) -> {
			int i = leaseParameters(statement, leader, leaderNode);
			statement.setString(++i, daemon);
			statement.setString(++i, node);
			statement.setLong(++i, leader.term());
			statement.setLong(++i, deletedGeneration);
			statement.setString(++i, daemon);
			statement.setObject(++i, timestamp(requestedAt));
			statement.setString(++i, this.channel);
			try (ResultSet rows = statement.executeQuery()) {
				Statements.requireDurable(statement);
				return rows.next() ? rows.getLong("generation") : 0L;
			}
		});
	}

	@Override
	public boolean revoke(FencingToken leader, String leaderNode, String daemon, long generation) {
		return leaderUpdate("revoke daemon", this.sql.revoke(), leader, leaderNode, daemon, generation);
	}

	@Override
	public boolean reclaim(FencingToken leader, String leaderNode, String daemon, long generation,
			AssignmentState state) {
		return execute("reclaim daemon", this.sql.reclaim(), (statement) -> {
			int i = leaseParameters(statement, leader, leaderNode);
			statement.setLong(++i, leader.term());
			statement.setString(++i, daemon);
			statement.setLong(++i, generation);
			statement.setString(++i, state.name());
			statement.setString(++i, this.channel);
			try (ResultSet rows = statement.executeQuery()) {
				Statements.requireDurable(statement);
				return rows.next();
			}
		});
	}

	@Override
	public boolean acknowledge(String node, String daemon, long generation) {
		return nodeUpdate("acknowledge daemon", this.sql.acknowledge(), node, daemon, generation, true);
	}

	@Override
	public boolean release(String node, String daemon, long generation) {
		return nodeUpdate("release daemon", this.sql.release(), node, daemon, generation, false);
	}

	@Override
	public DaemonRequest request(DaemonRequest.Kind kind, String daemon, @Nullable String node) {
		return execute("record daemon request", this.sql.request(), (statement) -> {
			statement.setString(1, kind.name());
			statement.setString(2, daemon);
			statement.setString(3, node);
			statement.setString(4, this.channel);
			return Statements.first(statement, (rows) -> new DaemonRequest(kind, rows.getString("daemon_name"),
					rows.getString("node_id"), Statements.instant(rows, "requested_at")));
		});
	}

	@Override
	public boolean drain(String node, boolean drained) {
		return execute("drain node", this.sql.drain(), (statement) -> {
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
		return execute("forget daemon request", this.sql.forget(), (statement) -> {
			int i = leaseParameters(statement, leader, leaderNode);
			statement.setString(++i, request.kind().name());
			statement.setString(++i, request.daemon());
			statement.setObject(++i, timestamp(request.requestedAt()));
			try (ResultSet rows = statement.executeQuery()) {
				Statements.requireDurable(statement);
				return rows.next() && rows.getLong("forgotten") == 1;
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
		return this.guards.run("lock assignment", this.sql.lock(), (statement) -> {
			statement.setLong(1, this.guards.holdLimitMillis());
			statement.setString(2, daemon);
			try (ResultSet rows = statement.executeQuery()) {
				return rows.next() ? new Assignment(rows.getString("daemon_name"), rows.getString("node_id"),
						AssignmentState.valueOf(rows.getString("state")), rows.getLong("generation"),
						rows.getLong("term"), Statements.instant(rows, "state_since")) : null;
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
				Statements.requireDurable(statement);
				return rows.next();
			}
		});
	}

	private boolean nodeUpdate(String task, String sql, String node, String daemon, long generation, boolean durable) {
		return execute(task, sql, (statement) -> {
			statement.setString(1, daemon);
			statement.setLong(2, generation);
			statement.setString(3, node);
			statement.setString(4, this.channel);
			try (ResultSet rows = statement.executeQuery()) {
				if (durable) {
					Statements.requireDurable(statement);
				}
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
		return this.connections.run(this.statements, task, sql, callback);
	}

	private static @Nullable OffsetDateTime timestamp(@Nullable Instant instant) {
		return (instant != null) ? instant.atOffset(java.time.ZoneOffset.UTC) : null;
	}

}
