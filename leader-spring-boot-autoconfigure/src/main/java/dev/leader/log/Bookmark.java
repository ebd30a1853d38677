package dev.leader.log;

import dev.leader.node.Names;

/**
 * A position in a group's decision log: the index of an entry and the term of the leader
 * that appended it. Returned by {@link DecisionLog#append}, and given to
 * {@link DecisionLog#awaitApplied} on any node to read that node's state once it has
 * applied the entry (read-your-writes across instances). The term makes a bookmark of a
 * history that the database lost (an asynchronous standby promoted before the entry
 * reached it) fail rather than pass: another entry then stands at that index, under
 * another term.
 * <p>
 * Its string form, {@code <group>@<term>.<index>}, is what travels in headers and
 * cookies; {@link #parse} reads it back.
 *
 * @param group the group
 * @param term the term of the leader that appended the entry; 0 for the start of a log
 * @param index the entry's index, from 1; 0 for the start of a log
 */
public record Bookmark(String group, long term, long index) {

	/**
	 * Creates a bookmark.
	 * @param group the group
	 * @param term the term, 0 or more
	 * @param index the index, 0 or more
	 */
	public Bookmark {
		Names.requireValid("group", group);
		if (term < 0 || index < 0) {
			throw new IllegalArgumentException(
					"A bookmark's term and index are 0 or more, were " + term + " and " + index);
		}
	}

	/**
	 * Reads a bookmark from its string form.
	 * @param text the string form, {@code <group>@<term>.<index>}
	 * @return the bookmark
	 * @throws IllegalArgumentException if the text is not a bookmark
	 */
	public static Bookmark parse(String text) {
		int at = text.lastIndexOf('@');
		int dot = text.indexOf('.', at + 1);
		if (at <= 0 || dot < 0) {
			throw new IllegalArgumentException("Not a bookmark (expected <group>@<term>.<index>): " + text);
		}
		try {
			return new Bookmark(text.substring(0, at), Long.parseLong(text.substring(at + 1, dot)),
					Long.parseLong(text.substring(dot + 1)));
		}
		catch (NumberFormatException ex) {
			throw new IllegalArgumentException("Not a bookmark (expected <group>@<term>.<index>): " + text, ex);
		}
	}

	@Override
	public String toString() {
		return this.group + "@" + this.term + "." + this.index;
	}

}
