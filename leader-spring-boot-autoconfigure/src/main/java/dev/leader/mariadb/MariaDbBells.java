package dev.leader.mariadb;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import dev.leader.jdbc.TablePrefix;
import dev.leader.node.OwnThreads;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * The doorbells of the MariaDB daemon store, which has no notifications: the stand-in for
 * PostgreSQL's assignments channel where nodes are bound to their sessions (node death by
 * session, {@link MariaDbWakeUps}), so that the daemons of a dead node move as fast as on
 * PostgreSQL. A hint, never a decision: the cycle it starts reads the rows.
 * <p>
 * Each node waits to be rung on a connection of its own, on the {@code leader-bell}
 * thread: the connection holds the node's bell lock ({@link MariaDbSql#bellLock}), by
 * which any node finds its {@code CONNECTION_ID()}, and waits in {@code GET_LOCK} for the
 * node's own node lock ({@link MariaDbSql#nodeLock}), which the node's holding session
 * holds while the node is bound, for {@link #WAIT_SECONDS}, repeated. Only its holder can
 * give a named lock, so a node rings another with {@code KILL QUERY} of the waiting
 * connection's id, which ends the wait at once without an error ({@code GET_LOCK} returns
 * {@code NULL}) and leaves the session as it was. Should the wait get the lock instead,
 * the holding session ended: the bell gives it back at once and waits again only once the
 * node is bound again. Connection ids are not reused while the server runs, and the id is
 * read from the bell lock just before, so a ring never ends another statement than a
 * bell's. A node rings the node of an assignment that it assigned, revoked or reclaimed,
 * and the holder of the daemons group's lease after an acknowledgement, a release, a
 * request or a drain, and when a bound node's session ended ({@link MariaDbWakeUps}). A
 * rung node wakes its daemon cycle.
 * <p>
 * {@code KILL QUERY} of another user's connection needs the {@code CONNECTION ADMIN}
 * privilege; nodes that share the application's user need none. A ring that fails, or
 * that arrives while the bell is between two waits, is lost: the node then acts on its
 * next heartbeat, as without bells.
 * <p>
 * Costs: one connection of the pool per node, waiting on the server; two statements per
 * ring. Thread-safe.
 */
final class MariaDbBells {

	private static final Log logger = LogFactory.getLog(MariaDbBells.class);

	/**
	 * The longest one wait lasts; the wait is repeated.
	 */
	static final int WAIT_SECONDS = 600;

	/**
	 * The error of a {@code KILL} of a connection that ended meanwhile.
	 */
	private static final int UNKNOWN_THREAD = 1094;

	private static final String TAKE = "SELECT GET_LOCK(" + MariaDbSql.bellLock("?") + ", 0)";

	private static final String WAIT = "SET STATEMENT max_statement_time = 0 FOR SELECT GET_LOCK("
			+ MariaDbSql.nodeLock("?") + ", " + WAIT_SECONDS + ")";

	private static final String RELEASE = "SELECT RELEASE_LOCK(" + MariaDbSql.nodeLock("?") + ")";

	private static final String ASSIGNEE = "SELECT IS_USED_LOCK(" + MariaDbSql.bellLock("node_id")
			+ ") FROM ${prefix}assignments WHERE daemon_name = ?";

	private static final String LEADER = "SELECT IS_USED_LOCK(" + MariaDbSql.bellLock("holder")
			+ ") FROM ${prefix}leases WHERE group_name = ? AND holder IS NOT NULL";

	private final MariaDbNamedLocks locks;

	private final String daemonsGroup;

	private final String takeSql;

	private final String waitSql;

	private final String releaseSql;

	private final String assigneeSql;

	private final String leaderSql;

	// Guarded by this.
	private @Nullable Consumer<String> listener;

	private @Nullable String nodeId;

	private @Nullable Bell bell;

	// Guarded by this: whether the node is bound, as its last heartbeat told.
	private boolean nodeBound;

	/**
	 * Creates the bells of a node's stores.
	 * @param locks the named locks, whose connections the bell waits on
	 * @param prefix the table prefix
	 * @param daemonsGroup the group whose leader assigns the daemons
	 */
	MariaDbBells(MariaDbNamedLocks locks, TablePrefix prefix, String daemonsGroup) {
		this.locks = locks;
		this.daemonsGroup = daemonsGroup;
		this.takeSql = MariaDbSql.render(prefix, TAKE);
		this.waitSql = MariaDbSql.render(prefix, WAIT);
		this.releaseSql = MariaDbSql.render(prefix, RELEASE);
		this.assigneeSql = MariaDbSql.render(prefix, ASSIGNEE);
		this.leaderSql = MariaDbSql.render(prefix, LEADER);
	}

	/**
	 * Starts waiting to be rung, once the node's id is known.
	 * @param listener told this node's id at each ring, on the {@code leader-bell} thread
	 * @return a handle that stops waiting
	 */
	AutoCloseable listen(Consumer<String> listener) {
		synchronized (this) {
			this.listener = listener;
		}
		startIfReady();
		return () -> {
			Bell stopped;
			synchronized (this) {
				this.listener = null;
				stopped = this.bell;
				this.bell = null;
				notifyAll();
			}
			if (stopped != null) {
				stopped.stop();
			}
		};
	}

	/**
	 * Learns this node's id, and whether it is bound, from a heartbeat, and starts the
	 * bell again if its wait failed.
	 * @param nodeId this node
	 * @param bound whether the node is bound to its holding session, whose node lock the
	 * bell waits for
	 */
	void node(String nodeId, boolean bound) {
		synchronized (this) {
			this.nodeId = nodeId;
			this.nodeBound = bound;
			notifyAll();
		}
		startIfReady();
	}

	/**
	 * Rings the node of a daemon's assignment, after a change of it has committed.
	 * @param daemon the daemon
	 */
	void ringAssignee(String daemon) {
		ring(this.assigneeSql, daemon, "the node of " + daemon);
	}

	/**
	 * Rings the leader of the daemons group, after a change it should look at has
	 * committed.
	 */
	void ringLeader() {
		ring(this.leaderSql, this.daemonsGroup, "the leader of " + this.daemonsGroup);
	}

	private void ring(String sql, String parameter, String whom) {
		try (Connection connection = this.locks.borrow()) {
			Long id;
			try (PreparedStatement statement = connection.prepareStatement(sql)) {
				statement.setQueryTimeout(this.locks.timeoutSeconds());
				statement.setString(1, parameter);
				try (ResultSet row = statement.executeQuery()) {
					id = row.next() ? (Long) row.getObject(1, Long.class) : null;
				}
			}
			if (id == null) {
				return;
			}
			try (Statement statement = connection.createStatement()) {
				statement.setQueryTimeout(this.locks.timeoutSeconds());
				statement.execute("KILL QUERY " + id);
			}
			catch (SQLException ex) {
				if (ex.getErrorCode() != UNKNOWN_THREAD) {
					throw ex;
				}
			}
		}
		catch (SQLException ex) {
			logger.debug("Could not ring " + whom + "; it acts on its next heartbeat: " + ex);
		}
	}

	private void startIfReady() {
		Bell started;
		synchronized (this) {
			if (this.listener == null || this.nodeId == null || this.bell != null) {
				return;
			}
			started = new Bell(this.nodeId);
			this.bell = started;
		}
		started.thread.start();
	}

	private synchronized void ended(Bell bell) {
		if (this.bell == bell) {
			this.bell = null;
		}
	}

	private synchronized @Nullable Consumer<String> listener() {
		return this.listener;
	}

	/**
	 * One node's bell: its lock and its wait, on a connection of its own.
	 */
	private final class Bell {

		private final String nodeId;

		private final Thread thread;

		// Guarded by this.
		private boolean stopped;

		private @Nullable Connection connection;

		Bell(String nodeId) {
			this.nodeId = nodeId;
			this.thread = OwnThreads.daemon("leader-bell", this::run);
		}

		void stop() {
			Connection connection;
			synchronized (this) {
				this.stopped = true;
				connection = this.connection;
			}
			synchronized (MariaDbBells.this) {
				MariaDbBells.this.notifyAll();
			}
			MariaDbNamedLocks.abort(connection, "the bell of " + this.nodeId);
		}

		private void run() {
			Connection connection = null;
			try {
				connection = MariaDbBells.this.locks.borrow();
				synchronized (this) {
					if (this.stopped) {
						return;
					}
					this.connection = connection;
				}
				if (!take(connection)) {
					// Another process under this node's id, which its heartbeat refuses.
					logger.debug("The bell of node " + this.nodeId + " is another connection's");
					return;
				}
				while (awaitBound()) {
					if (await(connection) && !isStopped()) {
						Consumer<String> listener = listener();
						if (listener != null) {
							listener.accept(this.nodeId);
						}
					}
				}
			}
			catch (SQLException | RuntimeException ex) {
				if (!isStopped()) {
					logger.debug(
							"The bell of node " + this.nodeId + " stopped; the next heartbeat starts it again: " + ex);
				}
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
			finally {
				synchronized (this) {
					this.connection = null;
				}
				// Never back to the pool: another node may ring this connection's id a
				// moment from now, and its KILL QUERY must not end a statement of whoever
				// borrows it next. Aborted, its id and its locks end with it.
				MariaDbNamedLocks.abort(connection, "the bell of " + this.nodeId);
				ended(this);
			}
		}

		private boolean take(Connection connection) throws SQLException {
			try (PreparedStatement statement = connection.prepareStatement(MariaDbBells.this.takeSql)) {
				statement.setQueryTimeout(MariaDbBells.this.locks.timeoutSeconds());
				// The name's expression repeats the node id three times.
				for (int i = 1; i <= 3; i++) {
					statement.setString(i, this.nodeId);
				}
				try (ResultSet row = statement.executeQuery()) {
					return row.next() && row.getLong(1) == 1;
				}
			}
		}

		// Waits until the node is bound; false once stopped.
		private boolean awaitBound() throws InterruptedException {
			synchronized (MariaDbBells.this) {
				while (!isStopped() && !MariaDbBells.this.nodeBound) {
					MariaDbBells.this.wait(TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
				}
			}
			return !isStopped();
		}

		// Whether the wait was rung rather than timed out or granted.
		private boolean await(Connection connection) throws SQLException {
			Long got = lockFunction(connection, MariaDbBells.this.waitSql,
					WAIT_SECONDS + MariaDbBells.this.locks.timeoutSeconds());
			if (got == null) {
				return true;
			}
			if (got == 1) {
				// The holding session ended: the node binds again on its next heartbeat.
				lockFunction(connection, MariaDbBells.this.releaseSql, MariaDbBells.this.locks.timeoutSeconds());
				synchronized (MariaDbBells.this) {
					MariaDbBells.this.nodeBound = false;
				}
			}
			return false;
		}

		private @Nullable Long lockFunction(Connection connection, String sql, int timeoutSeconds) throws SQLException {
			try (PreparedStatement statement = connection.prepareStatement(sql)) {
				statement.setQueryTimeout(timeoutSeconds);
				// The name's expression repeats the node id three times.
				for (int i = 1; i <= 3; i++) {
					statement.setString(i, this.nodeId);
				}
				try (ResultSet row = statement.executeQuery()) {
					row.next();
					long value = row.getLong(1);
					return row.wasNull() ? null : value;
				}
			}
		}

		private synchronized boolean isStopped() {
			return this.stopped;
		}

	}

}
