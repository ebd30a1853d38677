package dev.leader.log;

/**
 * Thrown by {@link DecisionLog#awaitApplied} for a bookmark whose entry the log no longer
 * holds: a failover of the database lost it (an asynchronous standby was promoted before
 * the entry reached it), and the log goes on without it. The decision it bookmarks must
 * be taken again, by the group's current leader; waiting longer does not help.
 */
public class LostEntryException extends IllegalStateException {

	private final Bookmark bookmark;

	/**
	 * Creates an exception.
	 * @param message the message
	 * @param bookmark the bookmark of the lost entry
	 */
	public LostEntryException(String message, Bookmark bookmark) {
		super(message);
		this.bookmark = bookmark;
	}

	/**
	 * Returns the bookmark of the lost entry.
	 * @return the bookmark
	 */
	public Bookmark bookmark() {
		return this.bookmark;
	}

}
