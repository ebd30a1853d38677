package dev.leader.node;

import java.util.regex.Pattern;

/**
 * Validation of the names users choose: node ids, group names and the readable node
 * names. Each fits the column it is stored in.
 * <p>
 * Internal, not for application use: public only because the starter's packages share it.
 */
public final class Names {

	private static final Pattern VALID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:-]{0,119}");

	private static final int MAX_READABLE_LENGTH = 200;

	private Names() {
	}

	/**
	 * Checks a node id or group name: 1 to 120 characters out of letters, digits,
	 * {@code .}, {@code _}, {@code :} and {@code -}, starting with a letter or digit.
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

	/**
	 * Checks a node's readable name: 1 to 200 characters, not blank, without control
	 * characters, which PostgreSQL rejects (NUL) or which garble the logs.
	 * @param name the name
	 * @return the name
	 * @throws IllegalArgumentException if the name is invalid
	 */
	public static String requireValidNodeName(String name) {
		if (name == null || name.isBlank() || name.codePointCount(0, name.length()) > MAX_READABLE_LENGTH
				|| name.codePoints().anyMatch(Character::isISOControl)) {
			String shown = (name == null || name.length() <= 40) ? name : name.substring(0, 40) + "...";
			throw new IllegalArgumentException("Invalid node name '" + shown + "'"
					+ ((name != null) ? " of " + name.codePointCount(0, name.length()) + " characters" : "")
					+ ": use 1 to " + MAX_READABLE_LENGTH + " characters, not all blank, without control characters");
		}
		return name;
	}

}
