package dev.leader.postgres;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.util.ArrayList;
import java.util.List;

import dev.leader.log.Bookmark;

import org.springframework.core.Ordered;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Fails the commit of a caller's transaction that appended to the log when PostgreSQL
 * reported that commit with a warning, as it does when the commit's wait for a
 * synchronous standby is cancelled ({@code pg_cancel_backend}, a driver's cancel): the
 * entries are then committed on the primary alone, and a failover to the standby loses
 * them. The append made the commit wait ({@code Statements.DURABLE}); the caller's
 * transaction manager commits later, so the check runs after that commit. pgjdbc adds the
 * warnings of a {@code COMMIT} to the connection's, so the warnings that the connection
 * gained between {@link #beforeCommit} and {@link #afterCommit} are the commit's.
 * <p>
 * The exception thrown in {@link #afterCommit} reaches the caller of the commit
 * ({@code TransactionTemplate.execute}, the {@code @Transactional} method) with the
 * transaction still committed; ordered first, it also keeps the application's later
 * after-commit callbacks from acting on entries that may be lost. Registered once per
 * transaction and connection, only where transaction synchronization is active (the
 * default of Spring's transaction managers). Called on the thread of the transaction.
 */
final class DurableCommitCheck implements TransactionSynchronization {

	private final Connection connection;

	private final List<Bookmark> appended = new ArrayList<>();

	private int warningsBefore;

	private DurableCommitCheck(Connection connection) {
		this.connection = connection;
	}

	/**
	 * Makes the commit of the transaction active on the calling thread fail unless
	 * PostgreSQL reports it without a warning.
	 * @param connection the transaction's connection
	 * @param entries the entries the transaction appended, for the message
	 */
	static void register(Connection connection, List<Bookmark> entries) {
		if (!TransactionSynchronizationManager.isSynchronizationActive()) {
			return;
		}
		for (TransactionSynchronization registered : TransactionSynchronizationManager.getSynchronizations()) {
			if (registered instanceof DurableCommitCheck check && check.connection == connection) {
				check.appended.addAll(entries);
				return;
			}
		}
		DurableCommitCheck check = new DurableCommitCheck(connection);
		check.appended.addAll(entries);
		TransactionSynchronizationManager.registerSynchronization(check);
	}

	@Override
	public int getOrder() {
		return Ordered.HIGHEST_PRECEDENCE;
	}

	@Override
	public void beforeCommit(boolean readOnly) {
		try {
			this.warningsBefore = count(this.connection.getWarnings());
		}
		catch (SQLException ex) {
			// The commit fails on such a connection too.
			this.warningsBefore = 0;
		}
	}

	@Override
	public void afterCommit() {
		SQLWarning warning;
		try {
			warning = this.connection.getWarnings();
		}
		catch (SQLException ex) {
			throw new DataAccessResourceFailureException(
					"Could not read the warnings of the commit of a transaction that appended " + describe()
							+ " to the decision log, so the commit is not known to be durable",
					ex);
		}
		for (int i = 0; warning != null; warning = warning.getNextWarning(), i++) {
			// Class 01 is a warning; a notice (00000) is information.
			if (i >= this.warningsBefore && warning.getSQLState() != null && warning.getSQLState().startsWith("01")) {
				throw new DataAccessResourceFailureException("The transaction that appended " + describe()
						+ " to the decision log committed, but its commit is not known to be durable: it may be on "
						+ "the primary alone, and a failover to a standby would lose it. PostgreSQL warned: "
						+ warning.getMessage(), warning);
			}
		}
	}

	private String describe() {
		Bookmark first = this.appended.get(0);
		return ((this.appended.size() == 1) ? "entry " : this.appended.size() + " entries, the first ") + first.index()
				+ " of group " + first.group() + " under term " + first.term();
	}

	private static int count(SQLWarning warning) {
		int count = 0;
		for (; warning != null; warning = warning.getNextWarning()) {
			count++;
		}
		return count;
	}

}
