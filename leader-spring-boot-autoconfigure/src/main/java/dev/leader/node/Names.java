package dev.leader.node;

import java.util.regex.Pattern;

/**
 * Validation of the names users choose: node ids and group names.
 */
public final class Names {

	private static final Pattern VALID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:-]{0,119}");

	private Names() {
	}

	/**
	 * Checks a node id or group name: 1 to 120 characters out of letters, digits, {@code .}, {@code _}, {@code :}
	 * and {@code -}, starting with a letter or digit.
	 * @param what what the name is, for the message
	 * @param name the name
	 * @return the name
	 * @throws IllegalArgumentException if the name is invalid
	 */
	public static String requireValid(String what, String name) {
		if (name == null || !VALID.matcher(name).matches()) {
			throw new IllegalArgumentException("Invalid " + what + " '" + name + "': use 1 to 120 letters, digits, "
					+ "'.', '_', ':' or '-', starting with a letter or digit");
		}
		return name;
	}

}
