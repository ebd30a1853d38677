package dev.leader.postgres;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.concurrent.atomic.AtomicReference;

import dev.leader.jdbc.OwnConnections;
import dev.leader.jdbc.Statements;
import org.jspecify.annotations.Nullable;

/**
 * Runs a store's round trips on the connection of its last round trip, kept instead of
 * left idle in the pool, because a pool checks a connection that has been idle for a
 * while before lending it (HikariCP: idle for more than 500 ms), and that check is a
 * round trip, and on PostgreSQL a transaction, of its own: it would double the
 * steady-state load and add a round trip to every hand-over.
 * <p>
 * Each round trip hands the kept connection back to the pool and borrows one at once,
 * which gives the same connection back unchecked while the pool's rules still apply (a
 * connection past its maximum lifetime is retired, leak detection counts from the
 * borrow). So one connection of the pool stays in use between round trips. A connection
 * that failed is not kept, so the round trip after a failure borrows a fresh, checked
 * one; the round trip that first finds a kept connection closed by the server fails, like
 * any failed round trip, and its caller retries. Because no check precedes a kept
 * connection's statement, a connection that hangs (a server that vanished without closing
 * it) is bounded by a network timeout of twice the query timeout.
 * <p>
 * Safe for concurrent callers: one connection is kept at most, and it is used by one
 * caller at a time; callers that overlap borrow their own. {@link #giveBack()} gives it
 * back.
 */
final class KeptConnection {

	private final OwnConnections connections;

	private final Statements statements;

	private final int networkTimeoutMillis;

	// The connection of the last round trip, for the next one; owned by whoever took it
	// out.
	private final AtomicReference<@Nullable Connection> kept = new AtomicReference<>();

	/**
	 * Creates a runner.
	 * @param connections where connections are borrowed
	 * @param statements runs each statement with the query timeout
	 */
	KeptConnection(OwnConnections connections, Statements statements) {
		this.connections = connections;
		this.statements = statements;
		this.networkTimeoutMillis = 2 * statements.timeoutSeconds() * 1000;
	}

	/**
	 * Runs one statement on the kept connection, or on a borrowed one if none is kept or
	 * another caller uses it, and keeps the connection afterwards unless the statement
	 * failed.
	 * @param <T> the type of the callback's result
	 * @param task what the statement does, for the message of a failure
	 * @param sql the statement
	 * @param callback binds the parameters, executes the statement and reads its result
	 * @return the callback's result
	 * @throws org.springframework.dao.DataAccessException if the round trip fails
	 */
	<T> T execute(String task, String sql, Statements.Callback<T> callback) {
		Connection connection;
		try {
			connection = borrow();
		}
		catch (SQLException ex) {
			throw Statements.translate(task, ex);
		}
		boolean succeeded = false;
		try {
			T result = this.statements.run(connection, task, sql, callback);
			succeeded = true;
			return result;
		}
		finally {
			if (!succeeded || !this.kept.compareAndSet(null, connection)) {
				this.connections.giveBack(connection);
			}
		}
	}

	/**
	 * Gives the kept connection back to the pool, if there is one; the next round trip
	 * borrows again.
	 */
	void giveBack() {
		Connection connection = this.kept.getAndSet(null);
		if (connection != null) {
			this.connections.giveBack(connection);
		}
	}

	/**
	 * Hands the kept connection back and borrows one at once, so that the pool lends it
	 * back without checking it, and retires it instead if its lifetime is over.
	 * @return the borrowed connection, with the network timeout set where the driver
	 * supports it
	 */
	private Connection borrow() throws SQLException {
		giveBack();
		Connection connection = this.connections.borrow();
		try {
			connection.setNetworkTimeout(Runnable::run, this.networkTimeoutMillis);
		}
		catch (SQLFeatureNotSupportedException ex) {
			// The query timeout still bounds statements on a server that answers.
		}
		catch (SQLException ex) {
			this.connections.giveBack(connection);
			throw ex;
		}
		return connection;
	}

}
