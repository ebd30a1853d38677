package dev.leader;

/**
 * Thrown when a {@link LeaderOnly} method is called on a node that does not lead its
 * group and the call cannot be skipped silently.
 */
public class NotLeaderException extends RuntimeException {

	private final String group;

	/**
	 * Creates a new exception.
	 * @param group the group this node does not lead
	 * @param message the message
	 */
	public NotLeaderException(String group, String message) {
		super(message);
		this.group = group;
	}

	/**
	 * Returns the group this node does not lead.
	 * @return the group
	 */
	public String getGroup() {
		return this.group;
	}

}
