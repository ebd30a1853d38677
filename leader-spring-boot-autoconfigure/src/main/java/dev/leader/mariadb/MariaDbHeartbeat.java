package dev.leader.mariadb;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ThreadLocalRandom;

import dev.leader.NodeInfo;
import dev.leader.jdbc.HeartbeatRows;
import dev.leader.jdbc.Statements;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.LeaseState;
import dev.leader.node.NodeRegistration;
import org.jspecify.annotations.Nullable;

/**
 * The heartbeat of {@link MariaDbCoordinationStore}: heartbeats the node's row, renews
 * the node's leases, reads the renewed leases, the requested ones and the members (and,
 * for the daemon store, the assignments: {@link MariaDbDaemonRows}), and forgets members
 * dead for twice the node expiry. The leases of the requested groups are read after the
 * renewal.
 * <p>
 * Where the pool's connections auto-commit ({@link MariaDbConnections#autoCommitted}),
 * the heartbeat of a node whose row is its own is statements that each commit on their
 * own: the renewal where the node holds a lease, the row's update by its incarnation,
 * then the read. Nothing in it needs the others' locks, each reads or writes atomically,
 * and the row is updated only once the renewal succeeded, so that other nodes count a
 * node whose renewals fail dead, as they would if it were one transaction. Otherwise, or
 * when the row is missing or another incarnation's, it runs in one transaction that locks
 * the node's row first, then registers the node, takes the row over from a silent process
 * with the same id, or finds another live process under its id and changes nothing, then
 * renews and reads.
 */
final class MariaDbHeartbeat {

	/**
	 * The heartbeat of a node whose row is its own incarnation's.
	 */
	private static final String BEAT = """
			UPDATE ${prefix}nodes SET heartbeat_at = ${now}, name = ?, host = ?, pid = ?, daemons = ?,
			  base_url = ?, zone = ?
			WHERE node_id = ? AND incarnation = ?""";

	/**
	 * The node's row, locked: the first statement of the heartbeat in a transaction.
	 */
	private static final String LOCK_NODE = """
			SELECT incarnation, heartbeat_at <= ${now} - INTERVAL ? MICROSECOND AS silent, host, pid,
			       ${heartbeat_age_ms} AS heartbeat_age_ms
			FROM ${prefix}nodes WHERE node_id = ? FOR UPDATE""";

	/**
	 * The valid leases under the node's id, read before a process registers the id: those
	 * it does not hold are another process's.
	 */
	private static final String LEASES_UNDER_ID = """
			SELECT group_name, holder, term, expires_at, ${remaining_ms} AS remaining_ms FROM ${prefix}leases
			WHERE holder = ? AND expires_at > ${now}""";

	private static final String INSERT_NODE = """
			INSERT INTO ${prefix}nodes (node_id, name, host, pid, incarnation, started_at, heartbeat_at, daemons,
			  drained, base_url, zone)
			VALUES (?, ?, ?, ?, ?, ${now}, ${now}, ?, FALSE, ?, ?)""";

	/**
	 * A heartbeat that takes the node's row over from a silent process with the same id,
	 * and clears that process's binding to its session.
	 */
	private static final String TAKE_OVER_NODE = """
			UPDATE ${prefix}nodes SET heartbeat_at = ${now}, started_at = ${now}, name = ?, host = ?, pid = ?,
			  daemons = ?, base_url = ?, zone = ?, incarnation = ?, drained = FALSE, session_id = NULL
			WHERE node_id = ?""";

	/**
	 * The renewal: updates the {@code leases} rows only, never {@code lease_terms}, so
	 * that it does not wait for guards. {@code renewal}, a number the heartbeat chose at
	 * random (migration {@code V7__lease_renewals.sql}), marks the rows it renewed.
	 */
	private static final String RENEW = """
			UPDATE ${prefix}leases SET renewed_at = ${now}, expires_at = ${now} + INTERVAL ? MICROSECOND, renewal = ?
			WHERE group_name IN (/*groups*/) AND (group_name, term) IN (/*terms*/) AND holder = ?
			  AND expires_at > ${now}""";

	/**
	 * What the heartbeat reads after its writes: {@code R}, a lease its renewal extended
	 * (marked with its number, by this holder and term); {@code L}, a lease it asks
	 * about, with the last index of the group's decision log; {@code N}, a member, with
	 * the session it is bound to in {@code session_id} ({@link MariaDbSql#NODE_SESSION})
	 * and its daemons. Its columns are those of
	 * {@link MariaDbDaemonRows#ASSIGNMENTS_REQUESTS_AND_CLOCK}, which
	 * {@link #TICK_ROWS_AND_DAEMONS} appends.
	 */
	private static final String TICK_ROWS = """
			SELECT 'R' AS kind, group_name, holder, term, expires_at, ${remaining_ms} AS remaining_ms,
			       NULL AS node_id, NULL AS name, NULL AS host, NULL AS pid, NULL AS started_at,
			       NULL AS heartbeat_at, NULL AS heartbeat_age_ms, NULL AS base_url, NULL AS zone, NULL AS log_index,
			       NULL AS log_term, NULL AS session_id, NULL AS daemons, NULL AS drained, NULL AS daemon_name,
			       NULL AS state, NULL AS generation, NULL AS since, NULL AS request_kind
			FROM ${prefix}leases
			WHERE group_name IN (/*groups*/) AND (group_name, term) IN (/*terms*/) AND holder = ?
			  AND renewal = ?
			UNION ALL
			SELECT 'L', l.group_name, l.holder, l.term, l.expires_at, ${remaining_ms}, NULL, NULL, NULL, NULL, NULL,
			       NULL, NULL, NULL, NULL, h.last_index, h.last_term, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
			FROM ${prefix}leases l LEFT JOIN ${prefix}log_heads h ON h.group_name = l.group_name
			WHERE l.group_name IN (/*requested*/)
			UNION ALL
			SELECT 'N', NULL, NULL, NULL, NULL, NULL, node_id, name, host, pid, started_at, heartbeat_at,
			       ${heartbeat_age_ms}, base_url, zone, NULL, NULL, ${node_session}, daemons, drained, NULL, NULL,
			       NULL, NULL, NULL
			FROM ${prefix}nodes""";

	/**
	 * {@link #TICK_ROWS} and the rest of the daemons' snapshot, in one statement.
	 */
	private static final String TICK_ROWS_AND_DAEMONS = TICK_ROWS + "\n"
			+ MariaDbDaemonRows.ASSIGNMENTS_REQUESTS_AND_CLOCK;

	private static final String FORGET = """
			DELETE FROM ${prefix}nodes WHERE node_id IN (/*nodes*/) AND heartbeat_at < ${now} - INTERVAL ? MICROSECOND""";

	private final MariaDbConnections connections;

	private final MariaDbSql.Rendered sql;

	MariaDbHeartbeat(MariaDbConnections connections, TablePrefix tablePrefix) {
		this.connections = connections;
		this.sql = MariaDbSql.renderAll(tablePrefix, BEAT, LOCK_NODE, LEASES_UNDER_ID, INSERT_NODE, TAKE_OVER_NODE,
				RENEW, TICK_ROWS, TICK_ROWS_AND_DAEMONS, FORGET);
	}

	/**
	 * Runs a heartbeat.
	 * @param node the node's registration
	 * @param held the groups whose leases the node holds, with their terms
	 * @param groups the groups whose leases to read
	 * @param leaseDuration the duration of a renewed lease
	 * @param nodeExpiry how long a node stays a live member after its last heartbeat
	 * @param sessions filled with the sessions that the other live nodes are bound to and
	 * that still hold their locks, by node, and with this node's own as its row reads it
	 * ({@link MariaDbSql#NODE_SESSION}, {@code 0} for none)
	 * @param daemons filled with the daemons' snapshot, read in the same statement as the
	 * members, or {@code null} not to read it
	 * @return the rows read
	 */
	HeartbeatRows run(NodeRegistration node, Map<String, Long> held, Collection<String> groups, Duration leaseDuration,
			Duration nodeExpiry, Map<String, Long> sessions, @Nullable MariaDbDaemonRows daemons) {
		Map<String, Long> sortedHeld = new TreeMap<>(held);
		String incarnation = HeartbeatRows.incarnation(node);
		String nodeDaemons = String.join(" ", new TreeSet<>(node.daemons()));
		long renewal = ThreadLocalRandom.current().nextLong();
		HeartbeatRows beat = this.connections.autoCommitted("heartbeat", (statements) -> {
			renew(statements, node, sortedHeld, groups, leaseDuration, renewal);
			if (statements.update(sql(BEAT), node.name(), node.host(), node.pid(), nodeDaemons, node.baseUrl(),
					node.zone(), node.id(), incarnation) == 0) {
				return null;
			}
			return read(statements, node, sortedHeld, groups, nodeExpiry, renewal, sessions, daemons);
		});
		if (beat != null) {
			return beat;
		}
		return this.connections.transaction("heartbeat", (tx) -> {
			register(tx, node, incarnation, nodeDaemons, nodeExpiry.toNanos() / 1000, sortedHeld);
			renew(tx, node, sortedHeld, groups, leaseDuration, renewal);
			return read(tx, node, sortedHeld, groups, nodeExpiry, renewal, sessions, daemons);
		});
	}

	private void renew(MariaDbConnections.Transaction tx, NodeRegistration node, Map<String, Long> held,
			Collection<String> groups, Duration leaseDuration, long renewal) throws SQLException {
		if (!held.isEmpty()) {
			tx.run(MariaDbSql.inLists(sql(RENEW), held, groups), (statement) -> {
				int i = 0;
				statement.setLong(++i, leaseDuration.toNanos() / 1000);
				statement.setLong(++i, renewal);
				i = MariaDbSql.bindHeld(statement, i, held);
				statement.setString(++i, node.id());
				return statement.executeUpdate();
			});
		}
	}

	private HeartbeatRows read(MariaDbConnections.Transaction tx, NodeRegistration node, Map<String, Long> held,
			Collection<String> groups, Duration nodeExpiry, long renewal, Map<String, Long> sessions,
			@Nullable MariaDbDaemonRows daemons) throws SQLException {
		sessions.clear();
		HeartbeatRows read = new HeartbeatRows(MariaDbCoordinationStore::lease, (rows) -> member(rows, nodeExpiry));
		List<String> forgotten = new ArrayList<>();
		String rowsSql = sql((daemons != null) ? TICK_ROWS_AND_DAEMONS : TICK_ROWS);
		tx.run(MariaDbSql.inLists(rowsSql, held, groups), (statement) -> {
			int i = MariaDbSql.bindHeld(statement, 0, held);
			statement.setString(++i, node.id());
			statement.setLong(++i, renewal);
			for (String group : groups) {
				statement.setString(++i, group);
			}
			try (ResultSet rows = statement.executeQuery()) {
				while (rows.next()) {
					read.add(rows);
					if (daemons != null) {
						daemons.add(rows);
					}
					// The ring leaves out a member whose heartbeat expired: paused, its
					// wait would take the next node's lock and keep it. This node's own
					// row is kept, so that a binding it lost is seen.
					if ("N".equals(rows.getString("kind"))
							&& (node.id().equals(rows.getString("node_id")) || (rows.getLong("session_id") > 0
									&& rows.getLong("heartbeat_age_ms") < nodeExpiry.toMillis()))) {
						sessions.put(rows.getString("node_id"), rows.getLong("session_id"));
					}
					if ("N".equals(rows.getString("kind")) && !node.id().equals(rows.getString("node_id"))
							&& rows.getLong("heartbeat_age_ms") > 2 * nodeExpiry.toMillis()) {
						forgotten.add(rows.getString("node_id"));
					}
				}
			}
			return null;
		});
		if (!forgotten.isEmpty()) {
			// By primary key, so that the delete locks only the rows of dead nodes,
			// never the row of a live node whose heartbeat holds it.
			tx.run(sql(FORGET).replace("/*nodes*/", MariaDbSql.markers(forgotten.size())), (statement) -> {
				int i = 0;
				for (String id : forgotten) {
					statement.setString(++i, id);
				}
				statement.setLong(++i, 2 * nodeExpiry.toNanos() / 1000);
				return statement.executeUpdate();
			});
		}
		return read;
	}

	// Registers, heartbeats or takes over the node's row, its lock held. A process that
	// registers the id, or takes it over, waits for the valid leases under it that it
	// does not hold: a lease may outlive its holder's last heartbeat (granted after it,
	// or longer than the node expiry), and its holder, merely paused, still acts on it.
	private void register(MariaDbConnections.Transaction tx, NodeRegistration node, String incarnation, String daemons,
			long expiryMicros, Map<String, Long> held) throws SQLException {
		NodeRow row = tx.run(sql(LOCK_NODE), (statement) -> {
			statement.setLong(1, expiryMicros);
			statement.setString(2, node.id());
			try (ResultSet rows = statement.executeQuery()) {
				return rows.next() ? new NodeRow(rows.getString("incarnation"), rows.getBoolean("silent"),
						rows.getString("host"), rows.getLong("pid"), rows.getLong("heartbeat_age_ms")) : null;
			}
		});
		if (row == null || !incarnation.equals(row.incarnation())) {
			requireNoLeasesOfAnotherProcess(tx, node.id(), held, row);
		}
		if (row == null) {
			tx.update(sql(INSERT_NODE), node.id(), node.name(), node.host(), node.pid(), incarnation, daemons,
					node.baseUrl(), node.zone());
		}
		else if (incarnation.equals(row.incarnation())) {
			tx.update(sql(BEAT), node.name(), node.host(), node.pid(), daemons, node.baseUrl(), node.zone(), node.id(),
					incarnation);
		}
		else if (row.silent()) {
			tx.update(sql(TAKE_OVER_NODE), node.name(), node.host(), node.pid(), daemons, node.baseUrl(), node.zone(),
					incarnation, node.id());
		}
		else {
			throw HeartbeatRows.duplicateNodeId(node.id(), row.host(), row.pid(), row.heartbeatAgeMillis());
		}
	}

	private void requireNoLeasesOfAnotherProcess(MariaDbConnections.Transaction tx, String nodeId,
			Map<String, Long> held, @Nullable NodeRow row) throws SQLException {
		if (row != null && !row.silent()) {
			// Live: refused below, with its host and pid.
			return;
		}
		List<LeaseState> foreign = new ArrayList<>(tx.run(sql(LEASES_UNDER_ID), (statement) -> {
			statement.setString(1, nodeId);
			return Statements.list(statement, MariaDbCoordinationStore::lease);
		}));
		foreign.removeIf((lease) -> Long.valueOf(lease.term()).equals(held.get(lease.group())));
		if (!foreign.isEmpty()) {
			throw HeartbeatRows.leasesOfAnotherProcess(nodeId, foreign);
		}
	}

	private String sql(String template) {
		return this.sql.of(template);
	}

	private static NodeInfo member(ResultSet rows, Duration nodeExpiry) throws SQLException {
		return new NodeInfo(rows.getString("node_id"), rows.getString("name"), rows.getString("host"),
				rows.getLong("pid"), MariaDbConnections.instant(rows, "started_at"),
				MariaDbConnections.instant(rows, "heartbeat_at"),
				rows.getLong("heartbeat_age_ms") < nodeExpiry.toMillis() && !MariaDbSql.sessionEnded(rows),
				rows.getString("base_url"), rows.getString("zone"));
	}

	private record NodeRow(String incarnation, boolean silent, String host, long pid, long heartbeatAgeMillis) {
	}

}
