package dev.leader.jdbc;

import java.util.regex.Pattern;

/**
 * The prefix of the starter's table names, validated so that it can be placed into SQL text safely.
 *
 * @param value the prefix, for example {@code leader_}
 */
public record TablePrefix(String value) {

	private static final Pattern VALID = Pattern.compile("[a-z_][a-z0-9_]{0,29}");

	/**
	 * Creates a prefix.
	 * @param value the prefix
	 * @throws IllegalArgumentException if the prefix is not a plain lower-case SQL identifier part
	 */
	public TablePrefix {
		if (value == null || !VALID.matcher(value).matches()) {
			throw new IllegalArgumentException("Invalid leader.jdbc.table-prefix '" + value + "': use 1 to 30 "
					+ "lower-case letters, digits or '_', not starting with a digit, for example 'leader_'");
		}
	}

}
