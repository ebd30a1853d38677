package dev.leader.etcd;

/**
 * Thrown at startup when the starter cannot use etcd as it is configured: a
 * {@code leader.etcd.*} property, or two of them together, cannot work, or a member
 * refused the starter's user, password or certificates. Its {@link #description()} says
 * what the starter found, its {@link #action()} what to change;
 * {@link EtcdSetupFailureAnalyzer} prints both. Neither holds a password.
 */
class EtcdSetupException extends IllegalArgumentException {

	private static final long serialVersionUID = 1L;

	private final String description;

	private final String action;

	EtcdSetupException(String description, String action) {
		super(description + " Action: " + action);
		this.description = description;
		this.action = action;
	}

	EtcdSetupException(String description, String action, Throwable cause) {
		this(description, action);
		initCause(cause);
	}

	/**
	 * Returns what the starter found.
	 * @return the description
	 */
	String description() {
		return this.description;
	}

	/**
	 * Returns what to change for the application to start.
	 * @return the action
	 */
	String action() {
		return this.action;
	}

}
