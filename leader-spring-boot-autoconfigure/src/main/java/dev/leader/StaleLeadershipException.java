package dev.leader;

import org.jspecify.annotations.Nullable;

/**
 * Thrown inside a transaction when a write is fenced with a term that no longer leads:
 * the lease has passed to a higher term or another holder, has expired in database time,
 * or a fence has already seen a higher term. The surrounding transaction must roll back;
 * a {@code @Transactional} method does so because this is a {@link RuntimeException}.
 * Retrying is pointless, because the term can never lead again.
 */
public class StaleLeadershipException extends RuntimeException {

	private final String group;

	private final long heldTerm;

	private final long currentTerm;

	private final @Nullable String currentHolder;

	/**
	 * Creates a new exception.
	 * @param message the message
	 * @param group the group whose term was checked
	 * @param heldTerm the term the caller wrote under
	 * @param currentTerm the term in the database, 0 if the group has no lease
	 * @param currentHolder the node holding the lease now, or {@code null} if none holds
	 * it or it is unknown
	 */
	public StaleLeadershipException(String message, String group, long heldTerm, long currentTerm,
			@Nullable String currentHolder) {
		super(message);
		this.group = group;
		this.heldTerm = heldTerm;
		this.currentTerm = currentTerm;
		this.currentHolder = currentHolder;
	}

	/**
	 * Returns the group whose term was checked.
	 * @return the group
	 */
	public String getGroup() {
		return this.group;
	}

	/**
	 * Returns the term the rejected write was made under.
	 * @return the held term
	 */
	public long getHeldTerm() {
		return this.heldTerm;
	}

	/**
	 * Returns the term found in the database.
	 * @return the current term, 0 if the group has no lease
	 */
	public long getCurrentTerm() {
		return this.currentTerm;
	}

	/**
	 * Returns the node that holds the lease now.
	 * @return the holder, or {@code null} if none holds it or the check was against a
	 * fence
	 */
	public @Nullable String getCurrentHolder() {
		return this.currentHolder;
	}

}
