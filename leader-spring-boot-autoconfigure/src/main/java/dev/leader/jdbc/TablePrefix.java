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
	 * in the Flyway migrations, and each other placeholder one of the package's fixed
	 * {@linkplain Statements#FRAGMENTS fragments}. Nothing that is not validated or
	 * constant ever reaches the SQL text.
	 * @param template the template
	 * @return the SQL
	 * @throws IllegalArgumentException if the template names an unknown placeholder
	 */
	String render(String template) {
		Matcher placeholders = PLACEHOLDER.matcher(template);
		StringBuilder sql = new StringBuilder(template.length() + 256);
		while (placeholders.find()) {
			String name = placeholders.group(1);
			String value = "prefix".equals(name) ? this.value : Statements.FRAGMENTS.get(name);
			if (value == null) {
				throw new IllegalArgumentException("Unknown placeholder ${" + name + "} in SQL template");
			}
			placeholders.appendReplacement(sql, Matcher.quoteReplacement(value));
		}
		placeholders.appendTail(sql);
		return sql.toString();
	}

	/**
	 * Returns a name of one of the package's notification channels.
	 * @param suffix the fixed suffix, for example {@code released}
	 * @return the channel name
	 */
	String channel(String suffix) {
		return this.value + suffix;
	}

}
