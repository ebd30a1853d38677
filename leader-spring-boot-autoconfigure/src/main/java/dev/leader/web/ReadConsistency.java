package dev.leader.web;

import java.util.Locale;

/**
 * The consistencies a follower read may ask for in its {@code Read-Consistency} header.
 */
enum ReadConsistency {

	/**
	 * Wait until this node has applied the request's bookmark.
	 */
	BOOKMARK,

	/**
	 * Serve only while this node is provably at most Max-Staleness behind.
	 */
	BOUNDED,

	/**
	 * Read the log's last committed index, then wait until it is applied.
	 */
	INDEX,

	/**
	 * Serve on the group's leader.
	 */
	LEADER;

	/**
	 * Reads a consistency from its header value, ignoring case.
	 * @param value the value
	 * @param what what the value is, for the message
	 * @return the consistency
	 * @throws IllegalArgumentException if the value names none
	 */
	static ReadConsistency parse(String value, String what) {
		for (ReadConsistency consistency : values()) {
			if (consistency.name().equalsIgnoreCase(value.trim())) {
				return consistency;
			}
		}
		throw new IllegalArgumentException(
				what + " must be one of bookmark, bounded, index or leader, was '" + ReadHeaders.shown(value) + "'");
	}

	/**
	 * Returns the header value of this consistency.
	 * @return the name in lower case
	 */
	String value() {
		return name().toLowerCase(Locale.ROOT);
	}

}
