package dev.leader.log;

import java.time.Instant;

/**
 * An entry of a group's decision log.
 *
 * @param group the group
 * @param index the entry's index: 1 for the first entry, then one more per entry, with no
 * gap
 * @param term the term of the leader that appended it
 * @param type what kind of decision it is, as the application names it
 * @param payload the decision, as the application encodes it
 * @param appendedAt when it was appended, by the database clock
 */
public record LogEntry(String group, long index, long term, String type, String payload, Instant appendedAt) {

	/**
	 * Returns the bookmark of this entry.
	 * @return the bookmark
	 */
	public Bookmark bookmark() {
		return new Bookmark(this.group, this.term, this.index);
	}

}
