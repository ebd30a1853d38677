package dev.leader.jdbc;

import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;

/**
 * The fragments that the MariaDB stores' SQL templates share, and their rendering.
 * Templates use the placeholder syntax of the migrations: {@code ${prefix}} is the table
 * prefix ({@link TablePrefix#render}), and {@code ${now}}, {@code ${remaining_ms}} and
 * {@code ${heartbeat_age_ms}} the constant fragments below.
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
	 * The lease guard, a template: locks the group's {@code lease_terms} row in share
	 * mode, and reads its holder and term, only if this holder holds it with this term,
	 * unexpired by the {@code leases} row of that term, read by a subquery without a
	 * lock. Parameters: the group, the holder, the term. In a {@code REPEATABLE READ}
	 * transaction InnoDB keeps the lock of a row it read even when the row did not match,
	 * until the transaction ends. The fencing guard and the leader's transitions of the
	 * daemon store take it first.
	 */
	static final String LOCK_LEASE = """
			SELECT t.holder, t.term FROM ${prefix}lease_terms t
			WHERE t.group_name = ? AND t.holder = ? AND t.term = ?
			  AND (SELECT l.expires_at > ${now} FROM ${prefix}leases l
			       WHERE l.group_name = t.group_name AND l.term = t.term)
			LOCK IN SHARE MODE""";

	private static final Map<String, String> FRAGMENTS = Map.of("${now}", NOW, "${remaining_ms}", REMAINING_MS,
			"${heartbeat_age_ms}", HEARTBEAT_AGE_MS);

	private MariaDbSql() {
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
