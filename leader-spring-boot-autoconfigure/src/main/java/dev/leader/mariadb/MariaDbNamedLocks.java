package dev.leader.mariadb;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HexFormat;

import javax.sql.DataSource;

import dev.leader.jdbc.OwnConnections;
import dev.leader.jdbc.TablePrefix;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * The named locks of the MariaDB wake-ups ({@link MariaDbWakeUps}): their names, the
 * connections they are taken on, and the statements that take, test and give them back.
 * Named locks belong to a session, not to a transaction. Thread-safe.
 */
final class MariaDbNamedLocks {

	private static final Log logger = LogFactory.getLog(MariaDbNamedLocks.class);

	private static final int MAX_NAME = 64;

	private final DataSource dataSource;

	private final String prefix;

	private final int timeoutSeconds;

	private volatile @Nullable String database;

	/**
	 * Creates the locks of a node's store.
	 * @param dataSource the MariaDB data source whose connections take the locks
	 * @param prefix the table prefix, which starts the locks' names
	 * @param timeoutSeconds the query timeout of the statements that do not wait
	 */
	MariaDbNamedLocks(DataSource dataSource, TablePrefix prefix, int timeoutSeconds) {
		this.dataSource = dataSource;
		this.prefix = prefix.render("${prefix}");
		this.timeoutSeconds = timeoutSeconds;
	}

	/**
	 * Returns the query timeout of the statements that do not wait.
	 * @return the timeout in whole seconds
	 */
	int timeoutSeconds() {
		return this.timeoutSeconds;
	}

	/**
	 * Borrows a connection of the pool to take locks on, in auto-commit.
	 * @return the connection, the caller's to close
	 * @throws SQLException if none can be borrowed
	 */
	Connection borrow() throws SQLException {
		Connection connection = this.dataSource.getConnection();
		try {
			// GET_LOCK is not transactional; auto-commit keeps the kept connection out
			// of an idle transaction, which idle_transaction_timeout would end.
			if (!connection.getAutoCommit()) {
				connection.setAutoCommit(true);
			}
			return connection;
		}
		catch (SQLException ex) {
			OwnConnections.closeQuietly(connection);
			throw ex;
		}
	}

	/**
	 * Returns the name of a group's lock, unique to the database, since named locks are
	 * the server's: the readable form when it fits MariaDB's 64 characters, else a
	 * digest.
	 * @param connection a connection to the database, to read its name the first time
	 * @param group the group
	 * @return the lock's name
	 * @throws SQLException if the database's name cannot be read
	 */
	String name(Connection connection, String group) throws SQLException {
		String database = this.database;
		if (database == null) {
			try (PreparedStatement statement = connection.prepareStatement("SELECT DATABASE()");
					ResultSet row = statement.executeQuery()) {
				row.next();
				database = String.valueOf(row.getString(1));
			}
			this.database = database;
		}
		String readable = this.prefix + "wake:" + database + ":" + group;
		if (readable.length() <= MAX_NAME) {
			return readable;
		}
		try {
			byte[] digest = MessageDigest.getInstance("SHA-256")
				.digest((database + "\u0000" + group).getBytes(StandardCharsets.UTF_8));
			return this.prefix + "wake:" + HexFormat.of().formatHex(digest).substring(0, 32);
		}
		catch (NoSuchAlgorithmException ex) {
			throw new IllegalStateException(ex);
		}
	}

	/**
	 * Closes a connection at once, from another thread than the one waiting on it: ends a
	 * {@code GET_LOCK} under way.
	 * @param connection the connection, or {@code null}
	 * @param what what the connection waits for, for the log
	 */
	static void abort(@Nullable Connection connection, String what) {
		if (connection != null) {
			try {
				connection.abort(Runnable::run);
			}
			catch (SQLException | RuntimeException ex) {
				logger.debug("Could not abort the wait for " + what + ": " + ex);
			}
		}
	}

	/**
	 * Gives a connection that may hold named locks back to the pool without them: named
	 * locks belong to the session, which the pool keeps, so a lock given back with the
	 * connection would stay held until the pool retires it, and no node waiting for it
	 * would wake. Releases them all, or, if that fails, aborts the connection, which the
	 * pool then retires, and whose session end releases them.
	 * @param connection the connection, closed by this method
	 * @param timeoutSeconds the query timeout
	 */
	static void giveBack(Connection connection, int timeoutSeconds) {
		try (PreparedStatement statement = connection.prepareStatement("SELECT RELEASE_ALL_LOCKS()")) {
			statement.setQueryTimeout(timeoutSeconds);
			statement.executeQuery().close();
		}
		catch (SQLException ex) {
			logger.debug("Could not release the named locks of a connection; it is evicted: " + ex);
			try {
				connection.abort(Runnable::run);
			}
			catch (SQLException | RuntimeException abortFailure) {
				// closed below either way
			}
		}
		OwnConnections.closeQuietly(connection);
	}

	/**
	 * Runs a lock function on a lock's name.
	 * @param connection the connection
	 * @param sql the statement, with the name as each of its parameters
	 * @param name the lock's name
	 * @param timeoutSeconds the query timeout
	 * @return the function's result, or {@code null} if it is {@code NULL}
	 * @throws SQLException if the statement fails
	 */
	static @Nullable Long run(Connection connection, String sql, String name, int timeoutSeconds) throws SQLException {
		try (PreparedStatement statement = connection.prepareStatement(sql)) {
			statement.setQueryTimeout(timeoutSeconds);
			long parameters = sql.chars().filter((c) -> c == '?').count();
			for (int i = 1; i <= parameters; i++) {
				statement.setString(i, name);
			}
			try (ResultSet row = statement.executeQuery()) {
				row.next();
				long value = row.getLong(1);
				return row.wasNull() ? null : value;
			}
		}
	}

}
