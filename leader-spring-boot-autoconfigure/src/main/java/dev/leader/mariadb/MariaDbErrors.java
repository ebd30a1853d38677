package dev.leader.mariadb;

/**
 * The MariaDB error codes the stores act on.
 */
final class MariaDbErrors {

	/**
	 * {@code ER_DUP_ENTRY}: an insert met an existing key. The one outcome of a race for
	 * a new row that the stores read from an error rather than from a row count, which
	 * depends on the connection's flags.
	 */
	static final int DUPLICATE_KEY = 1062;

	private MariaDbErrors() {
	}

}
