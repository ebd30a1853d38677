package dev.leader.node;

import java.net.URI;
import java.net.URISyntaxException;
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

	private static final Pattern VALID_ZONE = Pattern.compile("[A-Za-z0-9._-]{1,64}");

	private static final int MAX_URL_LENGTH = 500;

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

	/**
	 * Checks a zone: 1 to 64 letters, digits, {@code .}, {@code _} or {@code -}.
	 * @param zone the zone
	 * @return the zone
	 * @throws IllegalArgumentException if the zone is invalid
	 */
	public static String requireValidZone(String zone) {
		if (zone == null || !VALID_ZONE.matcher(zone).matches()) {
			throw new IllegalArgumentException(
					"Invalid zone '" + zone + "': use 1 to 64 letters, digits, '.', '_' or '-'");
		}
		return zone;
	}

	/**
	 * Checks a node's base URL: an absolute {@code http} or {@code https} URL with a
	 * host, no query and no fragment, of at most 500 characters. A trailing slash is
	 * removed.
	 * @param url the URL
	 * @return the URL without a trailing slash
	 * @throws IllegalArgumentException if the URL is invalid
	 */
	public static String requireValidBaseUrl(String url) {
		String problem = null;
		if (url == null || url.isBlank() || url.length() > MAX_URL_LENGTH) {
			problem = "use an absolute http or https URL of at most " + MAX_URL_LENGTH + " characters";
		}
		else {
			try {
				URI uri = new URI(url);
				if (!"http".equalsIgnoreCase(uri.getScheme()) && !"https".equalsIgnoreCase(uri.getScheme())) {
					problem = "the scheme must be http or https";
				}
				else if (uri.getHost() == null) {
					problem = "it has no host";
				}
				else if (uri.getRawQuery() != null || uri.getRawFragment() != null) {
					problem = "it must have no query and no fragment";
				}
			}
			catch (URISyntaxException ex) {
				problem = ex.getMessage();
			}
		}
		if (problem != null) {
			throw new IllegalArgumentException("Invalid base URL '" + url + "': " + problem
					+ ", such as http://10.0.0.7:8080 or https://node-1.example.com");
		}
		return url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
	}

}
