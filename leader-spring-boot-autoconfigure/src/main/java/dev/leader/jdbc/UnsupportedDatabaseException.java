package dev.leader.jdbc;

/**
 * Thrown at startup when the application's {@code DataSource} leads to a database, or
 * through a driver, that the starter's stores cannot coordinate on. Its message says what
 * the starter found and why it refuses it, its {@link #action()} what to change;
 * {@link UnsupportedDatabaseFailureAnalyzer} prints both.
 */
class UnsupportedDatabaseException extends IllegalStateException {

	private static final long serialVersionUID = 1L;

	private final String action;

	UnsupportedDatabaseException(String description, String action) {
		super(description);
		this.action = action;
	}

	/**
	 * Returns what to change for the application to start.
	 * @return the action
	 */
	String action() {
		return this.action;
	}

}
