package dev.leader.jdbc;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The prefix of the starter's table names, validated so that it can be placed into SQL
 * text safely. A bean of this type that the application defines replaces the one built
 * from {@code leader.jdbc.table-prefix}.
 *
 * @param value the prefix, for example {@code leader_}
 */
public record TablePrefix(String value) {

	private static final Pattern VALID = Pattern.compile("[a-z_][a-z0-9_]{0,29}");

	private static final Pattern PLACEHOLDER = Pattern.compile("\\$\\{([a-z_]+)}");

	/**
	 * Creates a prefix.
	 * @param value the prefix
	 * @throws IllegalArgumentException if the prefix is not a plain lower-case SQL
	 * identifier part
	 */
	public TablePrefix {
		if (value == null || !VALID.matcher(value).matches()) {
			throw new IllegalArgumentException("Invalid leader.jdbc.table-prefix '" + value + "': use 1 to 30 "
					+ "lower-case letters, digits or '_', not starting with a digit, for example 'leader_'");
		}
	}

	/**
	 * Renders a SQL template of this package: {@code ${prefix}} becomes this prefix, as
	 * in the Flyway migrations, {@code ${nodes_key}} the {@linkplain #nodesLockKey()
	 * first key of the nodes' advisory locks}, and each other placeholder one of the
	 * package's fixed {@linkplain Statements#FRAGMENTS fragments}, itself rendered.
	 * Nothing that is not validated or constant ever reaches the SQL text.
	 * @param template the template
	 * @return the SQL
	 * @throws IllegalArgumentException if the template names an unknown placeholder
	 */
	public String render(String template) {
		Matcher placeholders = PLACEHOLDER.matcher(template);
		StringBuilder sql = new StringBuilder(template.length() + 256);
		while (placeholders.find()) {
			String name = placeholders.group(1);
			String value = switch (name) {
				case "prefix" -> this.value;
				case "nodes_key" -> String.valueOf(nodesLockKey());
				default -> {
					String fragment = Statements.FRAGMENTS.get(name);
					if (fragment == null) {
						throw new IllegalArgumentException("Unknown placeholder ${" + name + "} in SQL template");
					}
					yield render(fragment);
				}
			};
			placeholders.appendReplacement(sql, Matcher.quoteReplacement(value));
		}
		placeholders.appendTail(sql);
		return sql.toString();
	}

	/**
	 * Returns the first key of the advisory locks that bind nodes to their sessions on
	 * PostgreSQL ({@code dev.leader.postgres.PostgresSessions}, whose group keys are
	 * computed alike): the hash of this prefix and {@code /nodes}, in the positive range
	 * of an {@code int}, where {@code pg_locks} shows it as the same number. No group
	 * name contains a {@code /}, so it is not the text of a group's key.
	 * @return the key
	 */
	public int nodesLockKey() {
		return (this.value + "/nodes").hashCode() & Integer.MAX_VALUE;
	}

	/**
	 * Returns a name of one of the package's notification channels.
	 * @param suffix the fixed suffix, for example {@code released}
	 * @return the channel name
	 */
	public String channel(String suffix) {
		return this.value + suffix;
	}

}
