package dev.leader.mariadb;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.LocalDateTime;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;

import dev.leader.FencingToken;
import dev.leader.jdbc.TablePrefix;
import org.jspecify.annotations.Nullable;

/**
 * The fragments that the MariaDB stores' SQL templates share, and their rendering.
 * Templates use the placeholder syntax of the migrations: {@code ${prefix}} is the table
 * prefix ({@link TablePrefix#render}), and {@code ${now}}, {@code ${remaining_ms}},
 * {@code ${heartbeat_age_ms}} and {@code ${node_session}} the constant fragments below.
 */
final class MariaDbSql {

	/**
	 * The database clock in UTC at the moment the expression is evaluated, as a
	 * {@code DATETIME(6)}. {@code NOW(6)} and {@code UTC_TIMESTAMP(6)} are the start of
	 * the statement, which can be long before a lock it waited for was granted;
	 * {@code SYSDATE(6)} is the moment of evaluation, but in the session's time zone,
	 * which is the application's to choose. So: the statement's start in UTC, plus the
	 * time since the start, both in the session's zone. That needs no session setting,
	 * and is exact unless the session's zone changes its offset during the statement. A
	 * server started with {@code --sysdate-is-now} makes it the statement's start.
	 */
	static final String NOW = "(UTC_TIMESTAMP(6) + INTERVAL TIMESTAMPDIFF(MICROSECOND, NOW(6), SYSDATE(6)) MICROSECOND)";

	/**
	 * The milliseconds a lease row has left, by the database clock; negative once it has
	 * expired.
	 */
	static final String REMAINING_MS = "(TIMESTAMPDIFF(MICROSECOND, " + NOW + ", expires_at) DIV 1000)";

	/**
	 * The milliseconds since a node row's last heartbeat, by the database clock.
	 */
	static final String HEARTBEAT_AGE_MS = "(TIMESTAMPDIFF(MICROSECOND, heartbeat_at, " + NOW + ") DIV 1000)";

	/**
	 * The lease guard of the starter's own {@code READ COMMITTED} transactions, a
	 * template: locks the group's {@code lease_terms} row in share mode, and reads its
	 * holder and term, only if this holder holds it with this term, unexpired by the
	 * {@code leases} row of that term, read by a subquery. Parameters: the group, the
	 * holder, the term. The leader's transitions of the daemon store take it first.
	 * <p>
	 * Not for a caller's transaction whose expiry this node knows
	 * ({@link #LOCK_LEASE_BEFORE}): at {@code SERIALIZABLE}, with auto-commit off, InnoDB
	 * turns the subquery's read into a shared lock on the {@code leases} row, which holds
	 * the holder's renewal up until the transaction ends.
	 */
	static final String LOCK_LEASE = """
			SELECT t.holder, t.term FROM ${prefix}lease_terms t
			WHERE t.group_name = ? AND t.holder = ? AND t.term = ?
			  AND (SELECT l.expires_at > ${now} FROM ${prefix}leases l
			       WHERE l.group_name = t.group_name AND l.term = t.term)
			LOCK IN SHARE MODE""";

	/**
	 * The lease guard in a caller's transaction, at any isolation level, a template:
	 * locks the group's {@code lease_terms} row in share mode if this holder holds it
	 * with this term, and tells whether the database time, read once the row is locked,
	 * is before an expiry of that term that this node saw committed
	 * ({@link MariaDbCoordinationStore#expiry}). It reads nothing that a renewal writes,
	 * so no isolation level makes it hold the renewal up. A renewal only ever moves the
	 * expiry of a term later, and a release or a new term changes the locked row, so the
	 * expiry this node saw is a lower bound of the term's expiry for as long as the row
	 * matches: a guard may refuse a lease that a renewal this node has not seen yet kept
	 * valid, never accept an expired one. Parameters: the expiry, the group, the holder,
	 * the term; the column {@code unexpired}. The row it locks stays locked until the
	 * transaction ends even when the lease has expired, which the guard's exception ends.
	 */
	static final String LOCK_LEASE_BEFORE = """
			SELECT t.holder, t.term, ${now} < ? AS unexpired FROM ${prefix}lease_terms t
			WHERE t.group_name = ? AND t.holder = ? AND t.term = ?
			LOCK IN SHARE MODE""";

	/**
	 * Whether the session a lease row is bound to ({@code session_id}, crash takeover,
	 * {@link MariaDbWakeUps}) no longer holds the named lock of the row's term: the
	 * holder's process died or its session ended. {@code IS_USED_LOCK} is the server's
	 * view at the moment of evaluation, so a follower's belief is never enough. False for
	 * an unbound row.
	 */
	static final String SESSION_GONE = "(session_id IS NOT NULL AND COALESCE(IS_USED_LOCK("
			+ termLock("group_name", "term") + "), 0) <> session_id)";

	/**
	 * An expression, on a row of the nodes table, for the session the node is bound to
	 * (node death by session, {@link MariaDbWakeUps}): {@code NULL} when it is not bound;
	 * the session's {@code CONNECTION_ID()} while it holds the node's named lock
	 * ({@link #nodeLock}); {@code 0} once it does not: the node's process died, or its
	 * session ended, and the node counts as dead whatever its last heartbeat
	 * ({@link #sessionEnded}). {@code IS_USED_LOCK} is the server's view at the moment of
	 * evaluation. A binding made before the server restarted finds no holder, or another
	 * connection, so it reads as ended until the node binds again (migration
	 * {@code V6__node_sessions.sql}).
	 */
	static final String NODE_SESSION = "(CASE WHEN session_id IS NULL THEN NULL WHEN IS_USED_LOCK("
			+ nodeLock("node_id") + ") <=> session_id THEN session_id ELSE 0 END)";

	private static final Map<String, String> FRAGMENTS = Map.of("${now}", NOW, "${remaining_ms}", REMAINING_MS,
			"${heartbeat_age_ms}", HEARTBEAT_AGE_MS, "${node_session}", NODE_SESSION);

	private MariaDbSql() {
	}

	/**
	 * Returns the name of the named lock of a lease's term, which the holder's session
	 * holds while the lease is bound to it:
	 * {@code <prefix>term:<database>:<group>:<term>} when it fits MariaDB's 64
	 * characters, else the prefix and a digest of that. Named locks belong to the server,
	 * hence the database. Computed by the server, so that the holder's statements and the
	 * acquire's check name the same lock. A digest that two terms share never frees a
	 * lease early: the check asks whether the bound session holds the name.
	 * @param group the SQL expression of the group name, a column or a parameter marker
	 * @param term the SQL expression of the term
	 * @return the SQL expression, with {@code ${prefix}}
	 */
	static String termLock(String group, String term) {
		String readable = "CONCAT('${prefix}term:', DATABASE(), ':', " + group + ", ':', " + term + ")";
		return "IF(CHAR_LENGTH(" + readable + ") <= 64, " + readable + ", CONCAT('${prefix}term:', LEFT(SHA2("
				+ readable + ", 256), 32)))";
	}

	/**
	 * Returns the name of a node's named lock, which the session the node is bound to
	 * holds: {@code <prefix>node:<database>:<node id>} when it fits MariaDB's 64
	 * characters, else the prefix and a digest of that. Computed by the server, so that
	 * the binding, the reads of the nodes and the watcher of the next node name the same
	 * lock. Two nodes whose digests collide cannot both bind, and the second one's death
	 * is seen by its heartbeat only.
	 * @param node the SQL expression of the node id, a column or a parameter marker
	 * @return the SQL expression, with {@code ${prefix}}
	 */
	static String nodeLock(String node) {
		return lockName("node", node);
	}

	/**
	 * Returns the name of a node's doorbell ({@link MariaDbBells}), held by the
	 * connection on which the node waits to be rung:
	 * {@code <prefix>bell:<database>:<node id>}, or a digest, as for {@link #nodeLock}.
	 * @param node the SQL expression of the node id
	 * @return the SQL expression, with {@code ${prefix}}
	 */
	static String bellLock(String node) {
		return lockName("bell", node);
	}

	private static String lockName(String kind, String node) {
		String readable = "CONCAT('${prefix}" + kind + ":', DATABASE(), ':', " + node + ")";
		return "IF(CHAR_LENGTH(" + readable + ") <= 64, " + readable + ", CONCAT('${prefix}" + kind + ":', LEFT(SHA2("
				+ readable + ", 256), 32)))";
	}

	/**
	 * Returns whether a node row says that the session its node is bound to ended
	 * ({@link #NODE_SESSION}, read as {@code session_id}).
	 * @param rows the result set, on a node row
	 * @return whether the node's session ended
	 * @throws SQLException if the column cannot be read
	 */
	static boolean sessionEnded(ResultSet rows) throws SQLException {
		return rows.getLong("session_id") == 0 && !rows.wasNull();
	}

	/**
	 * Returns the lease guard for a caller's transaction: {@link #LOCK_LEASE_BEFORE} when
	 * this node saw an expiry of the token's term, else {@link #LOCK_LEASE}.
	 * @param expiry the expiry of the term that this node saw committed, or {@code null}
	 * @return the template
	 */
	static String lockLease(@Nullable LocalDateTime expiry) {
		return (expiry != null) ? LOCK_LEASE_BEFORE : LOCK_LEASE;
	}

	/**
	 * Runs the lease guard of {@link #lockLease(LocalDateTime)}.
	 * @param statement the statement prepared from the template
	 * @param expiry the expiry the template was chosen for
	 * @param token the token
	 * @param nodeId the node that must hold the lease
	 * @return the outcome
	 * @throws SQLException if the statement fails
	 */
	static LeaseGuard lockLease(PreparedStatement statement, @Nullable LocalDateTime expiry, FencingToken token,
			String nodeId) throws SQLException {
		int i = 0;
		if (expiry != null) {
			MariaDbConnections.setTime(statement, ++i, expiry);
		}
		statement.setString(++i, token.group());
		statement.setString(++i, nodeId);
		statement.setLong(++i, token.term());
		try (ResultSet rows = statement.executeQuery()) {
			if (!rows.next()) {
				return LeaseGuard.REFUSED;
			}
			return (expiry == null || rows.getBoolean("unexpired")) ? LeaseGuard.LOCKED : LeaseGuard.EXPIRED;
		}
	}

	/**
	 * The outcome of a lease guard.
	 */
	enum LeaseGuard {

		/**
		 * The node holds the lease with the term, unexpired, and the row is locked.
		 */
		LOCKED,

		/**
		 * The node holds the term, but the database time has passed the expiry the node
		 * saw.
		 */
		EXPIRED,

		/**
		 * Refused: the node does not hold the lease with the term, or (without a known
		 * expiry) it has expired.
		 */
		REFUSED

	}

	/**
	 * Renders a template for a table prefix.
	 * @param prefix the validated table prefix
	 * @param template the template
	 * @return the SQL
	 */
	static String render(TablePrefix prefix, String template) {
		String sql = template;
		for (Map.Entry<String, String> fragment : FRAGMENTS.entrySet()) {
			sql = sql.replace(fragment.getKey(), fragment.getValue());
		}
		return prefix.render(sql);
	}

	/**
	 * Renders a store's templates for a table prefix, once.
	 * @param prefix the validated table prefix
	 * @param templates the store's templates
	 * @return the SQL of each template
	 */
	static Rendered renderAll(TablePrefix prefix, String... templates) {
		Map<String, String> sql = new HashMap<>();
		for (String template : templates) {
			sql.put(template, render(prefix, template));
		}
		return new Rendered(Map.copyOf(sql));
	}

	/**
	 * Returns {@code count} parameter markers separated by commas, for an {@code IN}
	 * list.
	 * @param count how many, at least one
	 * @return the markers
	 */
	static String markers(int count) {
		return String.join(", ", Collections.nCopies(count, "?"));
	}

	/**
	 * Fills the {@code IN} lists of a statement, marked by the comments {@code groups},
	 * the held groups; {@code terms}, their pairs of group and term; and
	 * {@code requested}, the requested groups. An empty list becomes {@code NULL}, which
	 * matches nothing.
	 * @param sql the rendered statement
	 * @param held the held groups and their terms, in the order {@link #bindHeld} binds
	 * them
	 * @param requested the requested groups
	 * @return the statement with its markers
	 */
	static String inLists(String sql, Map<String, Long> held, Collection<String> requested) {
		String pairs = held.isEmpty() ? "(NULL, NULL)" : String.join(", ", Collections.nCopies(held.size(), "(?, ?)"));
		return sql.replace("/*groups*/", held.isEmpty() ? "NULL" : markers(held.size()))
			.replace("/*terms*/", pairs)
			.replace("/*requested*/", requested.isEmpty() ? "NULL" : markers(requested.size()));
	}

	/**
	 * Binds the held groups, then their pairs of group and term, for the lists of
	 * {@link #inLists}.
	 * @param statement the statement
	 * @param index the index of the parameter before the first to bind
	 * @param held the held groups and their terms
	 * @return the index of the last parameter bound
	 * @throws SQLException if a parameter cannot be bound
	 */
	static int bindHeld(PreparedStatement statement, int index, Map<String, Long> held) throws SQLException {
		int i = index;
		for (String group : held.keySet()) {
			statement.setString(++i, group);
		}
		for (Map.Entry<String, Long> entry : held.entrySet()) {
			statement.setString(++i, entry.getKey());
			statement.setLong(++i, entry.getValue());
		}
		return i;
	}

	/**
	 * A store's templates, rendered for its table prefix.
	 *
	 * @param sql the SQL of each template, by template
	 */
	record Rendered(Map<String, String> sql) {

		/**
		 * Returns the SQL of a template.
		 * @param template the template, one of those rendered
		 * @return its SQL
		 * @throws IllegalArgumentException if the template was not rendered
		 */
		String of(String template) {
			String sql = this.sql.get(template);
			if (sql == null) {
				throw new IllegalArgumentException("Template not rendered: " + template);
			}
			return sql;
		}

	}

}
