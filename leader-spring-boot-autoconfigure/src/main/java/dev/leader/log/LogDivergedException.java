package dev.leader.log;

import org.jspecify.annotations.Nullable;

/**
 * Thrown by the reads of a group whose decision log diverged on this node: a failover of
 * the database lost entries that this node had already applied (an asynchronous standby
 * was promoted before they reached it), and the log may go on with other entries at their
 * indexes. Until the group's appliers have {@linkplain LogApplier#rewind rewound} past
 * the lost entries, nothing more is applied and no read is served as consistent;
 * {@link DecisionLog#failure} returns this exception meanwhile, and for good if an
 * applier cannot rewind.
 */
public class LogDivergedException extends IllegalStateException {

	private final Bookmark applied;

	private final @Nullable Bookmark common;

	/**
	 * Creates an exception.
	 * @param message the message
	 * @param applied the last entry this node had applied when it found the divergence
	 * @param common the last entry this node applied that the log still holds, or
	 * {@code null} while it is not known yet
	 */
	public LogDivergedException(String message, Bookmark applied, @Nullable Bookmark common) {
		super(message);
		this.applied = applied;
		this.common = common;
	}

	/**
	 * Returns the last entry this node had applied when it found the divergence.
	 * @return its bookmark
	 */
	public Bookmark applied() {
		return this.applied;
	}

	/**
	 * Returns the last entry this node applied that the log still holds: the entries
	 * after it that this node applied were lost.
	 * @return its bookmark, or {@code null} while it is not known yet
	 */
	public @Nullable Bookmark common() {
		return this.common;
	}

}
