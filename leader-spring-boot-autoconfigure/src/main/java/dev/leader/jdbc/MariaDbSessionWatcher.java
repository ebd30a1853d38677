package dev.leader.jdbc;

import java.sql.Connection;
import java.sql.SQLException;

import dev.leader.node.OwnThreads;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * Watches the session that binds a node's crash-takeover leases on MariaDB
 * ({@link MariaDbWakeUps}): that session holds a lock of its own,
 * {@code <prefix>live:<connection id>}, and this watcher waits for that lock in
 * {@code GET_LOCK} on a connection of its own, on the {@code leader-session-watch}
 * thread. It gets the lock the instant the session ends (a kill, a server restart), while
 * the session itself stays idle on the server, where the server notices a dead client at
 * once. A JDBC connection that is idle would notice its own end only when next used.
 * <p>
 * Costs: one connection of the pool, and one statement per {@link #WAIT_SECONDS}.
 */
final class MariaDbSessionWatcher {

	private static final Log logger = LogFactory.getLog(MariaDbSessionWatcher.class);

	/**
	 * The longest one {@code GET_LOCK} waits; the wait is repeated while the session
	 * lives.
	 */
	static final int WAIT_SECONDS = 600;

	private final MariaDbNamedLocks locks;

	private final String name;

	private final Outcome outcome;

	private final Thread thread;

	// Guarded by this.
	private boolean stopped;

	private @Nullable Connection connection;

	/**
	 * Creates a watcher, not started.
	 * @param locks the named locks, whose connections it waits on
	 * @param name the name of the lock that the watched session holds
	 * @param outcome told how the watch ended, unless stopped first
	 */
	MariaDbSessionWatcher(MariaDbNamedLocks locks, String name, Outcome outcome) {
		this.locks = locks;
		this.name = name;
		this.outcome = outcome;
		this.thread = OwnThreads.daemon("leader-session-watch", this::run);
	}

	void start() {
		this.thread.start();
	}

	/**
	 * Stops watching: ends a wait under way at once, and tells the outcome nothing.
	 * Returns without waiting for the thread, which ends with its statement.
	 */
	void stop() {
		Connection connection;
		synchronized (this) {
			this.stopped = true;
			connection = this.connection;
		}
		if (connection != null) {
			try {
				connection.abort(Runnable::run);
			}
			catch (SQLException | RuntimeException ex) {
				logger.debug("Could not abort the session watch: " + ex);
			}
		}
	}

	private void run() {
		boolean ended = false;
		try {
			Connection connection = this.locks.borrow();
			synchronized (this) {
				if (this.stopped) {
					OwnConnections.closeQuietly(connection);
					return;
				}
				this.connection = connection;
			}
			while (!isStopped()) {
				Long got = MariaDbNamedLocks.run(connection,
						"SET STATEMENT max_statement_time = 0 FOR SELECT GET_LOCK(?, " + WAIT_SECONDS + ")", this.name,
						WAIT_SECONDS + this.locks.timeoutSeconds());
				if (got != null && got == 1) {
					ended = true;
					MariaDbNamedLocks.run(connection, "SELECT RELEASE_LOCK(?)", this.name, this.locks.timeoutSeconds());
					break;
				}
			}
		}
		catch (SQLException | RuntimeException ex) {
			if (!isStopped()) {
				logger.debug("Session watch failed: " + ex);
				// The outcome may start another watch at once: not more than once a
				// second.
				try {
					Thread.sleep(1000);
				}
				catch (InterruptedException interrupted) {
					Thread.currentThread().interrupt();
				}
				this.outcome.failed(this);
			}
		}
		finally {
			Connection connection;
			synchronized (this) {
				connection = this.connection;
				this.connection = null;
			}
			if (connection != null) {
				MariaDbNamedLocks.giveBack(connection, this.locks.timeoutSeconds());
			}
		}
		if (ended && !isStopped()) {
			this.outcome.ended(this);
		}
	}

	private synchronized boolean isStopped() {
		return this.stopped;
	}

	/**
	 * How a watch ended.
	 */
	interface Outcome {

		/**
		 * The watched session ended.
		 * @param watcher the watcher
		 */
		void ended(MariaDbSessionWatcher watcher);

		/**
		 * The watch itself failed (its own connection), and the session may live.
		 * @param watcher the watcher
		 */
		void failed(MariaDbSessionWatcher watcher);

	}

}
