package dev.leader.web;

import java.time.Duration;

import dev.leader.log.Bookmark;
import org.jspecify.annotations.Nullable;

/**
 * The consistency a follower read asks for, read from its request headers.
 *
 * @param consistency the consistency to serve the read with
 * @param bookmark the bookmark to wait for, or {@code null}
 * @param maxStaleness the staleness bound, or {@code null}
 */
record ReadHeaders(ReadConsistency consistency, @Nullable Bookmark bookmark, @Nullable Duration maxStaleness) {

	/**
	 * The header that carries a bookmark, in requests and responses.
	 */
	static final String BOOKMARK = "Leader-Bookmark";

	/**
	 * The request header that carries the staleness bound in milliseconds.
	 */
	static final String MAX_STALENESS = "Max-Staleness";

	/**
	 * The request header that names the consistency.
	 */
	static final String CONSISTENCY = "Read-Consistency";

	/**
	 * The response header that carries the serving node's staleness bound.
	 */
	static final String STALENESS = "Staleness-Millis";

	/**
	 * The response header that names the node that ran the handler.
	 */
	static final String SERVED_BY = "Served-By";

	/**
	 * The request header that marks a forwarded request, with the id of the node that
	 * forwarded it.
	 */
	static final String FORWARDED_BY = "Leader-Forwarded-By";

	private static final long MAX_STALENESS_MILLIS = Duration.ofDays(1).toMillis();

	/**
	 * Reads the headers of a follower read of a group.
	 * @param group the group the handler reads
	 * @param bookmark the value of {@code Leader-Bookmark}, or {@code null}
	 * @param maxStaleness the value of {@code Max-Staleness}, or {@code null}
	 * @param consistency the value of {@code Read-Consistency}, or {@code null}
	 * @param defaultConsistency the consistency of a request that names none and carries
	 * neither a bookmark nor a staleness bound
	 * @return the headers
	 * @throws IllegalArgumentException with a message for the client if a header is
	 * malformed, the bookmark is of another group, or the consistency lacks the header it
	 * needs
	 */
	static ReadHeaders parse(String group, @Nullable String bookmark, @Nullable String maxStaleness,
			@Nullable String consistency, ReadConsistency defaultConsistency) {
		Bookmark parsedBookmark = (bookmark != null) ? bookmark(group, bookmark) : null;
		Duration bound = (maxStaleness != null) ? maxStaleness(maxStaleness) : null;
		ReadConsistency chosen;
		if (consistency != null) {
			chosen = ReadConsistency.parse(consistency, CONSISTENCY);
		}
		else if (parsedBookmark != null) {
			chosen = ReadConsistency.BOOKMARK;
		}
		else if (bound != null) {
			chosen = ReadConsistency.BOUNDED;
		}
		else {
			chosen = defaultConsistency;
		}
		if (chosen == ReadConsistency.BOOKMARK && parsedBookmark == null) {
			throw new IllegalArgumentException(
					CONSISTENCY + ": bookmark needs a " + BOOKMARK + " header (<group>@<term>.<index>)");
		}
		if (chosen == ReadConsistency.BOUNDED && bound == null) {
			throw new IllegalArgumentException(
					CONSISTENCY + ": bounded needs a " + MAX_STALENESS + " header (milliseconds)");
		}
		return new ReadHeaders(chosen, parsedBookmark, bound);
	}

	private static Bookmark bookmark(String group, String value) {
		Bookmark bookmark;
		try {
			bookmark = Bookmark.parse(value.trim());
		}
		catch (IllegalArgumentException ex) {
			throw new IllegalArgumentException(BOOKMARK + " must be <group>@<term>.<index>, such as " + group
					+ "@3.42, was '" + shown(value) + "'");
		}
		if (!bookmark.group().equals(group)) {
			throw new IllegalArgumentException(BOOKMARK + " " + bookmark + " is of group '" + bookmark.group()
					+ "', but this resource reads group '" + group + "'");
		}
		return bookmark;
	}

	private static Duration maxStaleness(String value) {
		String trimmed = value.trim();
		long millis = -1;
		if (!trimmed.isEmpty() && trimmed.length() <= 10 && trimmed.chars().allMatch(Character::isDigit)) {
			millis = Long.parseLong(trimmed);
		}
		if (millis < 0 || millis > MAX_STALENESS_MILLIS) {
			throw new IllegalArgumentException(MAX_STALENESS + " must be a whole number of milliseconds from 0 to "
					+ MAX_STALENESS_MILLIS + ", was '" + shown(value) + "'");
		}
		return Duration.ofMillis(millis);
	}

	/**
	 * Returns a header value as a message may show it: at most 80 characters, without
	 * control characters.
	 * @param value the value
	 * @return the value to show
	 */
	static String shown(String value) {
		String cut = (value.length() > 80) ? value.substring(0, 80) + "..." : value;
		return cut.replaceAll("\\p{Cntrl}", "?");
	}

}
