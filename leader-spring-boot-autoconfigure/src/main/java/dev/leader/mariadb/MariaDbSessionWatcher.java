package dev.leader.mariadb;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.TimeUnit;

import dev.leader.jdbc.OwnConnections;
import dev.leader.node.OwnThreads;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * Watches the session that binds a node's crash-takeover leases on MariaDB
 * ({@link MariaDbWakeUps}), or the session of another node (its node lock, on the
 * {@code leader-session-node} thread): that session holds a lock of its own,
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

	private final LockName name;

	private final Outcome outcome;

	private final Thread thread;

	private final long delayMillis;

	private final long createdAt = System.nanoTime();

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
		this(locks, name, outcome, 0);
	}

	/**
	 * Creates a watcher, not started, that starts watching after a delay: the watch
	 * before it failed while the session lived, and a watch that keeps failing must not
	 * spin.
	 * @param locks the named locks, whose connections it waits on
	 * @param name the name of the lock that the watched session holds
	 * @param outcome told how the watch ended, unless stopped first
	 * @param delayMillis how long to wait before watching
	 */
	MariaDbSessionWatcher(MariaDbNamedLocks locks, String name, Outcome outcome, long delayMillis) {
		this(locks, "leader-session-watch", (connection) -> name, outcome, delayMillis);
	}

	/**
	 * Creates a watcher, not started, of a lock whose name the server computes.
	 * @param locks the named locks, whose connections it waits on
	 * @param threadName the name of its thread
	 * @param name the name of the lock that the watched session holds, read on the
	 * watcher's connection before it waits
	 * @param outcome told how the watch ended, unless stopped first
	 * @param delayMillis how long to wait before watching
	 */
	MariaDbSessionWatcher(MariaDbNamedLocks locks, String threadName, LockName name, Outcome outcome,
			long delayMillis) {
		this.locks = locks;
		this.name = name;
		this.outcome = outcome;
		this.delayMillis = delayMillis;
		this.thread = OwnThreads.daemon(threadName, this::run);
	}

	/**
	 * Returns how long ago this watcher was created.
	 * @return the time in milliseconds
	 */
	long ranMillis() {
		return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - this.createdAt);
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
			notifyAll();
		}
		MariaDbNamedLocks.abort(connection, "the end of the holding session");
	}

	private void run() {
		boolean ended = false;
		try {
			if (this.delayMillis > 0) {
				synchronized (this) {
					long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(this.delayMillis);
					long left;
					while (!this.stopped && (left = deadline - System.nanoTime()) > 0) {
						TimeUnit.NANOSECONDS.timedWait(this, left);
					}
				}
			}
			Connection connection = this.locks.borrow();
			synchronized (this) {
				if (this.stopped) {
					OwnConnections.closeQuietly(connection);
					return;
				}
				this.connection = connection;
			}
			String name = this.name.name(connection);
			while (!isStopped()) {
				Long got = MariaDbNamedLocks.run(connection,
						"SET STATEMENT max_statement_time = 0 FOR SELECT GET_LOCK(?, " + WAIT_SECONDS + ")", name,
						WAIT_SECONDS + this.locks.timeoutSeconds());
				if (got != null && got == 1) {
					ended = true;
					MariaDbNamedLocks.run(connection, "SELECT RELEASE_LOCK(?)", name, this.locks.timeoutSeconds());
					break;
				}
			}
		}
		catch (SQLException | RuntimeException ex) {
			if (!isStopped()) {
				logger.debug("Session watch failed: " + ex);
				this.outcome.failed(this);
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
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
	 * The name of the watched lock.
	 */
	@FunctionalInterface
	interface LockName {

		/**
		 * Returns the name.
		 * @param connection the watcher's connection
		 * @return the name
		 * @throws SQLException if the server cannot compute it
		 */
		String name(Connection connection) throws SQLException;

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
