package dev.leader.mariadb;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
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
import dev.leader.jdbc.Statements;
import dev.leader.jdbc.TablePrefix;
import org.jspecify.annotations.Nullable;

/**
 * {@link DaemonStore} on MariaDB. Each transition is one transaction
 * ({@link MariaDbConnections}) that compares and sets the daemon's generation and state,
 * with every time the database's, in UTC. The leader's transitions first lock its lease's
 * {@code lease_terms} row in share mode, as a guard does, and change nothing unless the
 * leader still holds the lease with its term, unexpired: a takeover waits for them, and a
 * deposed leader's transition finds no lease to match.
 * <p>
 * <b>Locks.</b> As for leases, the row that the daemon guard ({@link #lock}) locks in
 * share mode, in {@code assignment_owners}, is apart from the assignment row that an
 * acknowledgement and a revoke update, so that neither waits for guarded transactions, at
 * any isolation level: the guard reads the owner row alone, so the assignment it returns
 * has the node, the generation and whether it is live (a live one as ASSIGNING), with no
 * term (0) and no time (the epoch). An assignment and the end of one (reclaim, release:
 * DELETED) lock the owner row {@code FOR UPDATE} first, and wait for them.
 * <p>
 * <b>What is weaker than on PostgreSQL.</b> No notifications ({@link #listen} delivers
 * nothing, unless nodes are bound to their sessions: then doorbells,
 * {@link MariaDbBells}): nodes poll the assignments with every heartbeat, whose read
 * statement also reads the snapshot where this store was given the node's coordination
 * store ({@link #followHeartbeat}), and act on a change within that interval rather than
 * at once. Generations do not rise across a failover of the server (no epoch).
 * <p>
 * Public so that a node can also be built without a Spring context.
 */
public final class MariaDbDaemonStore implements DaemonStore, DaemonGuard {

	/**
	 * The nodes, assignments, requests and the database time, in one statement, so in one
	 * snapshot. A node bound to a session that ended is dead
	 * ({@link MariaDbSql#NODE_SESSION}).
	 */
	private static final String READ = """
			SELECT 'N' AS kind, node_id, daemons, drained, ${heartbeat_age_ms} AS heartbeat_age_ms,
			       NULL AS daemon_name, NULL AS state, NULL AS generation, NULL AS term, NULL AS since,
			       NULL AS request_kind, ${node_session} AS session_id
			FROM ${prefix}nodes
			UNION ALL
			SELECT 'A', node_id, NULL, NULL, NULL, daemon_name, state, generation, term, state_since, NULL, NULL
			FROM ${prefix}assignments
			UNION ALL
			SELECT 'Q', node_id, NULL, NULL, NULL, daemon_name, NULL, NULL, NULL, requested_at, kind, NULL
			FROM ${prefix}daemon_requests
			UNION ALL
			SELECT 'T', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, ${now}, NULL, NULL""";

	/**
	 * The leader's lease, locked by the lease guard ({@link MariaDbSql#LOCK_LEASE}): the
	 * first statement of each of the leader's transitions.
	 */
	private static final String LEASE = MariaDbSql.LOCK_LEASE;

	private static final String LOCK_OWNER = """
			SELECT node_id, generation, live FROM ${prefix}assignment_owners WHERE daemon_name = ? FOR UPDATE""";

	private static final String INSERT_OWNER = """
			INSERT INTO ${prefix}assignment_owners (daemon_name, node_id, generation, live) VALUES (?, ?, ?, TRUE)""";

	private static final String INSERT_ASSIGNMENT = """
			INSERT INTO ${prefix}assignments (daemon_name, node_id, state, generation, term, assigned_at,
			  state_since)
			VALUES (?, ?, 'ASSIGNING', ?, ?, ${now}, ${now})""";

	private static final String REASSIGN_OWNER = """
			UPDATE ${prefix}assignment_owners SET node_id = ?, generation = ?, live = TRUE WHERE daemon_name = ?""";

	private static final String REASSIGN = """
			UPDATE ${prefix}assignments SET node_id = ?, state = 'ASSIGNING', generation = ?, term = ?,
			  assigned_at = ${now}, acked_at = NULL, revoking_at = NULL, deleted_at = NULL, state_since = ${now}
			WHERE daemon_name = ?""";

	private static final String CONSUME_REQUEST = """
			DELETE FROM ${prefix}daemon_requests WHERE kind = 'MOVE' AND daemon_name = ? AND requested_at = ?""";

	/**
	 * A revoke changes neither node nor generation: it updates the assignment row alone,
	 * and waits for no guard. Its state changes, so the count is the same whether the
	 * driver reports rows found or rows changed.
	 */
	private static final String REVOKE = """
			UPDATE ${prefix}assignments SET state = 'REVOKING', term = ?, revoking_at = ${now},
			  state_since = ${now}
			WHERE daemon_name = ? AND generation = ? AND state IN ('ASSIGNING', 'ACTIVE')""";

	private static final String END_OWNER = """
			UPDATE ${prefix}assignment_owners SET live = FALSE WHERE daemon_name = ?""";

	/**
	 * Ends the assignment, in the state given or any live state if {@code NULL}. Its
	 * state changes, so the count is the same whether the driver reports rows found or
	 * rows changed.
	 */
	private static final String END = """
			UPDATE ${prefix}assignments SET state = 'DELETED', term = COALESCE(?, term), deleted_at = ${now},
			  state_since = ${now}
			WHERE daemon_name = ? AND state <> 'DELETED' AND state = COALESCE(?, state)""";

	/**
	 * An acknowledgement, like a revoke, updates the assignment row alone.
	 */
	private static final String ACKNOWLEDGE = """
			UPDATE ${prefix}assignments SET state = 'ACTIVE', acked_at = ${now}, state_since = ${now}
			WHERE daemon_name = ? AND generation = ? AND node_id = ? AND state = 'ASSIGNING'
			  AND NOT EXISTS (SELECT 1 FROM ${prefix}nodes WHERE node_id = ? AND ${node_session} = 0)""";

	/**
	 * Records a request, or replaces the one of the same kind and daemon. The outcome is
	 * read back, never inferred from the upsert's count.
	 */
	private static final String REQUEST = """
			INSERT INTO ${prefix}daemon_requests (kind, daemon_name, node_id, requested_at) VALUES (?, ?, ?, ${now})
			ON DUPLICATE KEY UPDATE node_id = VALUES(node_id), requested_at = VALUES(requested_at)""";

	private static final String READ_REQUEST = """
			SELECT daemon_name, node_id, requested_at FROM ${prefix}daemon_requests WHERE kind = ? AND daemon_name = ?""";

	private static final String DRAIN = "UPDATE ${prefix}nodes SET drained = ? WHERE node_id = ?";

	private static final String NODE_EXISTS = "SELECT 1 FROM ${prefix}nodes WHERE node_id = ?";

	private static final String FORGET = """
			DELETE FROM ${prefix}daemon_requests WHERE kind = ? AND daemon_name = ? AND requested_at = ?""";

	/**
	 * The daemon guard: locks the owner row in share mode and reads it alone. It reads
	 * nothing from the assignment row, which the acknowledgement and the revoke update:
	 * at {@code SERIALIZABLE} with auto-commit off InnoDB turns every read of the
	 * transaction into a shared lock, and one on the assignment row would hold the node's
	 * own acknowledgement up until the transaction ends.
	 */
	private static final String LOCK = """
			SELECT daemon_name, node_id, generation, live FROM ${prefix}assignment_owners WHERE daemon_name = ?
			LOCK IN SHARE MODE""";

	private final MariaDbConnections connections;

	private final GuardStatements guards;

	private final MariaDbSql.Rendered sql;

	private final @Nullable MariaDbCoordinationStore coordination;

	/**
	 * Creates a store.
	 * @param dataSource the MariaDB data source
	 * @param tablePrefix the prefix of the starter's tables
	 * @param queryTimeout the longest a statement may run; rounded up to whole seconds
	 * @param holdLimit the longest a transaction guarded by {@link #lock} may stay idle
	 * (rounded down to whole seconds, at least one), and each of its later statements may
	 * run, holding the owner row
	 */
	public MariaDbDaemonStore(DataSource dataSource, TablePrefix tablePrefix, Duration queryTimeout,
			Duration holdLimit) {
		this(dataSource, tablePrefix, queryTimeout, holdLimit, null);
	}

	/**
	 * Creates a store that works with the node's coordination store: the node's heartbeat
	 * reads the snapshot ({@link #followHeartbeat}), and where that store binds nodes to
	 * their sessions ({@link MariaDbCoordinationStore#crashTakeover}), every change of an
	 * assignment rings the node it concerns or the leader ({@link MariaDbBells}), and
	 * {@link #listen} delivers the rings to this node.
	 * @param dataSource the MariaDB data source
	 * @param tablePrefix the prefix of the starter's tables
	 * @param queryTimeout the longest a statement may run; rounded up to whole seconds
	 * @param holdLimit the longest a transaction guarded by {@link #lock} may stay idle
	 * (rounded down to whole seconds, at least one), and each of its later statements may
	 * run, holding the owner row
	 * @param coordination the coordination store of the node's engine, on the same
	 * tables, or {@code null}
	 */
	public MariaDbDaemonStore(DataSource dataSource, TablePrefix tablePrefix, Duration queryTimeout, Duration holdLimit,
			@Nullable MariaDbCoordinationStore coordination) {
		this.coordination = coordination;
		this.connections = new MariaDbConnections(dataSource, queryTimeout);
		this.guards = new GuardStatements(dataSource, queryTimeout, holdLimit,
				"call DaemonContext.guard() inside a @Transactional method");
		this.sql = MariaDbSql.renderAll(tablePrefix, READ, LEASE, LOCK_OWNER, INSERT_OWNER, INSERT_ASSIGNMENT,
				REASSIGN_OWNER, REASSIGN, CONSUME_REQUEST, REVOKE, END_OWNER, END, ACKNOWLEDGE, REQUEST, READ_REQUEST,
				DRAIN, NODE_EXISTS, FORGET, LOCK);
	}

	/**
	 * Reads the snapshot in one statement, which commits on its own where the pool's
	 * connections auto-commit ({@link MariaDbConnections#autoCommitted}).
	 */
	@Override
	public DaemonSnapshot read(Duration nodeExpiry) {
		MariaDbConnections.Work<DaemonSnapshot> read = (tx) -> tx.run(sql(READ), (statement) -> {
			MariaDbDaemonRows rows = new MariaDbDaemonRows(nodeExpiry);
			try (ResultSet result = statement.executeQuery()) {
				while (result.next()) {
					rows.add(result);
				}
			}
			return rows.snapshot();
		});
		DaemonSnapshot snapshot = this.connections.autoCommitted("read assignments", read);
		return (snapshot != null) ? snapshot : this.connections.transaction("read assignments", read);
	}

	@Override
	public long assign(FencingToken leader, String leaderNode, String daemon, String node, long deletedGeneration,
			@Nullable Instant requestedAt) {
		long assigned = this.connections.transaction("assign daemon", (tx) -> {
			if (!leads(tx, leader, leaderNode)) {
				return 0L;
			}
			Owner owner = owner(tx, daemon);
			long generation;
			if (owner == null) {
				generation = 1;
				try {
					tx.update(sql(INSERT_OWNER), daemon, node, generation);
				}
				catch (SQLException ex) {
					if (ex.getErrorCode() != MariaDbErrors.DUPLICATE_KEY) {
						throw ex;
					}
					// Assigned by a concurrent transition since the lock found no row.
					return 0L;
				}
				tx.update(sql(INSERT_ASSIGNMENT), daemon, node, generation, leader.term());
			}
			else {
				if (owner.live() || owner.generation() != deletedGeneration) {
					return 0L;
				}
				generation = owner.generation() + 1;
				tx.update(sql(REASSIGN_OWNER), node, generation, daemon);
				tx.update(sql(REASSIGN), node, generation, leader.term(), daemon);
			}
			if (requestedAt != null) {
				tx.update(sql(CONSUME_REQUEST), daemon, MariaDbConnections.parameter(requestedAt));
			}
			return generation;
		});
		if (assigned > 0) {
			ringAssignee(daemon);
		}
		return assigned;
	}

	@Override
	public boolean revoke(FencingToken leader, String leaderNode, String daemon, long generation) {
		boolean revoked = this.connections.transaction("revoke daemon",
				(tx) -> leads(tx, leader, leaderNode) && tx.update(sql(REVOKE), leader.term(), daemon, generation) > 0);
		if (revoked) {
			ringAssignee(daemon);
		}
		return revoked;
	}

	@Override
	public boolean reclaim(FencingToken leader, String leaderNode, String daemon, long generation,
			AssignmentState state) {
		boolean reclaimed = this.connections.transaction("reclaim daemon",
				(tx) -> leads(tx, leader, leaderNode) && end(tx, daemon, generation, null, state, leader.term()));
		if (reclaimed) {
			ringAssignee(daemon);
		}
		return reclaimed;
	}

	@Override
	public boolean acknowledge(String node, String daemon, long generation) {
		boolean acknowledged = this.connections.transaction("acknowledge daemon",
				(tx) -> tx.update(sql(ACKNOWLEDGE), daemon, generation, node, node) > 0);
		if (acknowledged) {
			ringLeader();
		}
		return acknowledged;
	}

	@Override
	public boolean release(String node, String daemon, long generation) {
		boolean released = this.connections.transaction("release daemon",
				(tx) -> end(tx, daemon, generation, node, null, null));
		if (released) {
			ringLeader();
		}
		return released;
	}

	// Ends a live assignment of the given generation (and node and state, if given):
	// locks the owner row first, which waits for the guarded transactions of the daemon.
	// The assignment row's own update checks the state, after waiting for an
	// acknowledgement in progress; the owner row changes only if it did.
	private boolean end(MariaDbConnections.Transaction tx, String daemon, long generation, @Nullable String node,
			@Nullable AssignmentState state, @Nullable Long term) throws SQLException {
		Owner owner = owner(tx, daemon);
		if (owner == null || !owner.live() || owner.generation() != generation
				|| (node != null && !node.equals(owner.node()))) {
			return false;
		}
		if (tx.update(sql(END), term, daemon, (state != null) ? state.name() : null) == 0) {
			return false;
		}
		tx.update(sql(END_OWNER), daemon);
		return true;
	}

	@Override
	public DaemonRequest request(DaemonRequest.Kind kind, String daemon, @Nullable String node) {
		DaemonRequest recorded = this.connections.transaction("record daemon request", (tx) -> {
			tx.update(sql(REQUEST), kind.name(), daemon, node);
			return tx.run(sql(READ_REQUEST), (statement) -> {
				statement.setString(1, kind.name());
				statement.setString(2, daemon);
				return Statements.first(statement, (rows) -> new DaemonRequest(kind, rows.getString("daemon_name"),
						rows.getString("node_id"), MariaDbConnections.instant(rows, "requested_at")));
			});
		});
		ringLeader();
		return recorded;
	}

	@Override
	public boolean drain(String node, boolean drained) {
		boolean known = this.connections.transaction("drain node", (tx) -> {
			// The update's count would be zero for a node already in that state on a
			// connection that counts rows changed, so whether the node is known is read.
			tx.update(sql(DRAIN), drained, node);
			return tx.run(sql(NODE_EXISTS), (statement) -> {
				statement.setString(1, node);
				try (ResultSet rows = statement.executeQuery()) {
					return rows.next();
				}
			});
		});
		if (known) {
			ringLeader();
		}
		return known;
	}

	@Override
	public boolean forget(FencingToken leader, String leaderNode, DaemonRequest request) {
		return this.connections.transaction("forget daemon request",
				(tx) -> leads(tx, leader, leaderNode) && tx.update(sql(FORGET), request.kind().name(), request.daemon(),
						MariaDbConnections.parameter(request.requestedAt())) == 1);
	}

	/**
	 * Delivers this node's id when another node rings it ({@link MariaDbBells}), where
	 * the coordination store binds nodes to their sessions; otherwise nothing, and nodes
	 * see changes on their next heartbeat.
	 */
	@Override
	public AutoCloseable listen(Consumer<String> listener) {
		MariaDbBells bells = bells();
		return (bells != null) ? bells.listen(listener) : () -> {
		};
	}

	/**
	 * Delivers the snapshot that the heartbeat of the node's coordination store reads
	 * ({@link MariaDbCoordinationStore#readDaemonsWithHeartbeat}), where this store was
	 * given it.
	 */
	@Override
	public @Nullable AutoCloseable followHeartbeat(Consumer<DaemonSnapshot> follower) {
		return (this.coordination != null) ? this.coordination.readDaemonsWithHeartbeat(follower) : null;
	}

	private void ringAssignee(String daemon) {
		MariaDbBells bells = bells();
		if (bells != null) {
			bells.ringAssignee(daemon);
		}
	}

	private void ringLeader() {
		MariaDbBells bells = bells();
		if (bells != null) {
			bells.ringLeader();
		}
	}

	private @Nullable MariaDbBells bells() {
		return (this.coordination != null) ? this.coordination.bells() : null;
	}

	@Override
	public @Nullable Assignment lock(String daemon) {
		return this.guards.run("lock assignment", sql(LOCK), (statement) -> {
			statement.setString(1, daemon);
			// The limits come before the lock, as the lease guard's do.
			MariaDbHoldLimits limits = MariaDbHoldLimits.apply(statement.getConnection(),
					this.guards.holdLimitMillis());
			try (ResultSet rows = statement.executeQuery()) {
				boolean found = rows.next();
				boolean live = found && rows.getBoolean("live");
				// A row found keeps the limits, live or not: it is locked.
				if (!found && limits != null) {
					limits.undo();
				}
				if (!found) {
					return null;
				}
				// The owner row has no state, term or time of its own.
				return new Assignment(rows.getString("daemon_name"), rows.getString("node_id"),
						live ? AssignmentState.ASSIGNING : AssignmentState.DELETED, rows.getLong("generation"), 0,
						Instant.EPOCH);
			}
		});
	}

	private boolean leads(MariaDbConnections.Transaction tx, FencingToken leader, String leaderNode)
			throws SQLException {
		return tx.run(sql(LEASE), (statement) -> {
			statement.setString(1, leader.group());
			statement.setString(2, leaderNode);
			statement.setLong(3, leader.term());
			try (ResultSet rows = statement.executeQuery()) {
				return rows.next();
			}
		});
	}

	private @Nullable Owner owner(MariaDbConnections.Transaction tx, String daemon) throws SQLException {
		return tx.run(sql(LOCK_OWNER), (statement) -> {
			statement.setString(1, daemon);
			try (ResultSet rows = statement.executeQuery()) {
				return rows.next()
						? new Owner(rows.getString("node_id"), rows.getLong("generation"), rows.getBoolean("live"))
						: null;
			}
		});
	}

	private String sql(String template) {
		return this.sql.of(template);
	}

	private record Owner(String node, long generation, boolean live) {
	}

}
