package dev.leader.jdbc;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

import javax.sql.DataSource;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.postgresql.PGConnection;

/**
 * Lends the starter's stores connections of the application's pool with the settings
 * their statements need, whatever the pool's defaults, and restores those defaults before
 * a connection goes back: auto-commit on, so that each statement commits by itself (a
 * pool with auto-commit off would otherwise never commit a grant), and
 * {@code READ COMMITTED}, so that a concurrent change of a row makes a statement re-read
 * it rather than fail with a serialization error (a pool at {@code REPEATABLE READ} or
 * {@code SERIALIZABLE}). Durability is the statements' own business: see
 * {@code dev.leader.postgres.PostgresCoordinationStore}.
 * <p>
 * The pool's defaults are read once, from the first connection: auto-commit costs nothing
 * to switch, the isolation level costs a round trip each way, so a pool that already runs
 * {@code READ COMMITTED}, as PostgreSQL's default does, pays nothing. Thread-safe.
 */
public final class OwnConnections {

	private static final Log logger = LogFactory.getLog(OwnConnections.class);

	private final DataSource dataSource;

	private volatile @Nullable Defaults defaults;

	public OwnConnections(DataSource dataSource) {
		this.dataSource = dataSource;
	}

	/**
	 * Fails unless the data source leads to a writable primary.
	 * @throws IllegalStateException if its connections are read-only, or lead to a
	 * standby or a read-only database
	 * @throws SQLException if the database cannot be reached
	 */
	public void requireWritablePrimary() throws SQLException {
		try (Connection connection = this.dataSource.getConnection()) {
			Defaults defaults = probe(connection);
			String problem = null;
			if (defaults.standby()) {
				problem = "it leads to a standby server (pg_is_in_recovery() is true)";
			}
			else if (defaults.readOnlyConnection()) {
				problem = "its connections are read-only (for example spring.datasource.hikari.read-only=true)";
			}
			else if (defaults.readOnlyDatabase()) {
				problem = "its transactions are read-only (default_transaction_read_only is on for this database "
						+ "or user)";
			}
			if (problem != null) {
				throw new IllegalStateException("leader-spring-boot-starter writes its leases to its DataSource (the "
						+ "@LeaderDataSource bean, else the application's), but " + problem + ". Point that "
						+ "DataSource (spring.datasource.url, or the @LeaderDataSource bean's URL) at the primary, "
						+ "for example with targetServerType=primary on a multi-host URL, and give the starter a "
						+ "writable connection");
			}
		}
	}

	/**
	 * Borrows a connection from the pool, set up for the starter's statements.
	 * @return a connection in auto-commit mode with the {@code READ COMMITTED} isolation
	 */
	public Connection borrow() throws SQLException {
		Connection connection = this.dataSource.getConnection();
		try {
			Defaults defaults = this.defaults;
			if (defaults == null) {
				synchronized (this) {
					defaults = (this.defaults != null) ? this.defaults : probe(connection);
				}
			}
			if (!defaults.autoCommit()) {
				connection.setAutoCommit(true);
			}
			if (defaults.isolation() != Connection.TRANSACTION_READ_COMMITTED) {
				connection.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
			}
			return connection;
		}
		catch (SQLException | RuntimeException ex) {
			closeQuietly(connection);
			throw ex;
		}
	}

	/**
	 * Runs one statement on a connection from {@link #borrow()} and gives it back.
	 * @param <T> the type of the callback's result
	 * @param statements the runner of the statement
	 * @param task what the statement does, for the message of a failure
	 * @param sql the statement
	 * @param callback binds the parameters, executes the statement and reads its result
	 * @return the callback's result
	 */
	public <T> T run(Statements statements, String task, String sql, Statements.Callback<T> callback) {
		Connection connection;
		try {
			connection = borrow();
		}
		catch (SQLException ex) {
			throw Statements.translate(task, ex);
		}
		try {
			return statements.run(connection, task, sql, callback);
		}
		finally {
			giveBack(connection);
		}
	}

	/**
	 * Restores the pool's defaults on a connection from {@link #borrow()} and gives it
	 * back.
	 * @param connection the connection to give back
	 */
	public void giveBack(Connection connection) {
		Defaults defaults = this.defaults;
		try {
			if (defaults != null && !connection.isClosed()) {
				if (defaults.isolation() != Connection.TRANSACTION_READ_COMMITTED) {
					connection.setTransactionIsolation(defaults.isolation());
				}
				if (!defaults.autoCommit()) {
					connection.setAutoCommit(false);
				}
			}
		}
		catch (SQLException ex) {
			logger.debug("Could not restore a connection's settings; the pool resets or retires it: " + ex);
		}
		closeQuietly(connection);
	}

	/**
	 * Tells whether consecutive transactions of one connection of the pool may run in
	 * different server sessions, as they do behind a pooler in transaction mode
	 * (PgBouncer's {@code pool_mode = transaction}). While a second connection holds a
	 * transaction open, the first one runs a transaction before and after: behind such a
	 * pooler, the second one is lent the server session that the first one just used, or
	 * the first one moves to another. Behind a session pooler or none, a connection keeps
	 * its session and no other connection ever gets it, so the answer is never
	 * {@code true} there. A transaction pooler that lends sessions round-robin may go
	 * unseen.
	 * @return whether the pool's connections share server sessions
	 * @throws SQLException if the database cannot be reached
	 */
	public boolean sharesSessions() throws SQLException {
		Connection first = borrow();
		try {
			int before = backend(first);
			Connection second = borrow();
			try {
				second.setAutoCommit(false);
				int held = backend(second);
				int after = backend(first);
				second.rollback();
				second.setAutoCommit(true);
				return held == before || after != before;
			}
			finally {
				giveBack(second);
			}
		}
		finally {
			giveBack(first);
		}
	}

	/**
	 * Tells whether the pool's connections name statements on the server after a few
	 * executions (pgjdbc's {@code prepareThreshold}), which fails behind a pooler in
	 * transaction mode unless it keeps prepared statements itself (PgBouncer 1.21 and
	 * later, with {@code max_prepared_statements}).
	 * @return whether the threshold is above zero
	 * @throws SQLException if the database cannot be reached
	 */
	public boolean preparesOnServer() throws SQLException {
		Connection connection = borrow();
		try {
			return connection.unwrap(PGConnection.class).getPrepareThreshold() > 0;
		}
		finally {
			giveBack(connection);
		}
	}

	private static int backend(Connection connection) throws SQLException {
		try (Statement statement = connection.createStatement();
				ResultSet row = statement.executeQuery("SELECT pg_backend_pid()")) {
			row.next();
			return row.getInt("pg_backend_pid");
		}
	}

	private Defaults probe(Connection connection) throws SQLException {
		try (Statement statement = connection.createStatement(); ResultSet row = statement.executeQuery("""
				SELECT pg_is_in_recovery() AS standby, current_setting('transaction_isolation') AS isolation,
				       current_setting('default_transaction_read_only') AS read_only""")) {
			row.next();
			Defaults defaults = new Defaults(connection.getAutoCommit(), isolation(row.getString("isolation")),
					connection.isReadOnly(), row.getBoolean("standby"), "on".equals(row.getString("read_only")));
			if (!connection.getAutoCommit()) {
				// The probe's own transaction must not outlive it.
				connection.rollback();
			}
			this.defaults = defaults;
			return defaults;
		}
	}

	private static int isolation(String level) {
		return switch (level) {
			case "serializable" -> Connection.TRANSACTION_SERIALIZABLE;
			case "repeatable read" -> Connection.TRANSACTION_REPEATABLE_READ;
			case "read uncommitted" -> Connection.TRANSACTION_READ_UNCOMMITTED;
			default -> Connection.TRANSACTION_READ_COMMITTED;
		};
	}

	public static void closeQuietly(Connection connection) {
		try {
			connection.close();
		}
		catch (SQLException ex) {
			logger.debug("Could not give a connection back: " + ex);
		}
	}

	private record Defaults(boolean autoCommit, int isolation, boolean readOnlyConnection, boolean standby,
			boolean readOnlyDatabase) {
	}

}
