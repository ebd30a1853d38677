package dev.leader.jdbc;

import java.time.Duration;

import javax.sql.DataSource;

/**
 * Runs the statements of a store's guards (the lease and fence guards, the daemon guard)
 * on the connection of the Spring-managed transaction whose writes they protect, and
 * holds the limit that a guard which locked a row sets on the rest of that transaction.
 */
public final class GuardStatements {

	private final DataSource dataSource;

	private final Statements statements;

	private final long holdLimitMillis;

	private final String how;

	/**
	 * Creates a runner.
	 * @param dataSource the data source whose transactions are guarded
	 * @param queryTimeout the longest a statement may run, including the wait for the row
	 * lock; rounded up to whole seconds
	 * @param holdLimit the longest a guarded transaction may hold the row lock idle, and
	 * each of its later statements may run; at least a millisecond
	 * @param how what the caller must do to have such a transaction, for the message of a
	 * guard called outside one
	 */
	public GuardStatements(DataSource dataSource, Duration queryTimeout, Duration holdLimit, String how) {
		this.dataSource = dataSource;
		this.statements = new Statements(queryTimeout);
		this.holdLimitMillis = Math.max(1, holdLimit.toMillis());
		this.how = how;
	}

	/**
	 * Returns the hold limit.
	 * @return the limit in milliseconds, at least one
	 */
	public long holdLimitMillis() {
		return this.holdLimitMillis;
	}

	/**
	 * Runs a statement in the transaction active on the calling thread.
	 * @param <T> the type of the callback's result
	 * @param task what the statement does, for the message of a failure
	 * @param sql the statement
	 * @param callback binds the parameters, executes the statement and reads its result
	 * @return the callback's result
	 * @see Statements#runInTransaction
	 */
	public <T> T run(String task, String sql, Statements.Callback<T> callback) {
		return this.statements.runInTransaction(this.dataSource, this.how, task, sql, callback);
	}

}
