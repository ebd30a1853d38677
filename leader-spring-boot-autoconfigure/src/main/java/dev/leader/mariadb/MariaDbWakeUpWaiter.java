package dev.leader.mariadb;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;

import dev.leader.jdbc.OwnConnections;
import dev.leader.lease.CoordinationStore.ReleaseListener;
import dev.leader.node.OwnThreads;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * The waiting side of the MariaDB wake-ups ({@link MariaDbWakeUps}): waits for one
 * group's lock on a connection of its own, on the {@code leader-wake-<group>} thread, and
 * tells the listener when it gets it.
 */
final class MariaDbWakeUpWaiter {

	private static final Log logger = LogFactory.getLog(MariaDbWakeUpWaiter.class);

	/**
	 * What the wait answers when no session holds the lock.
	 */
	private static final long FREE = -1;

	private final String group;

	private final MariaDbNamedLocks locks;

	private final Supplier<@Nullable ReleaseListener> listener;

	private final Consumer<MariaDbWakeUpWaiter> ended;

	private final Thread thread;

	// Guarded by this: whether another node holds the lease as last learned, and
	// whether something was learned since the last wake-up or free lock.
	private boolean othersHold;

	private boolean fresh;

	private boolean stopped;

	private @Nullable Connection connection;

	/**
	 * Creates a waiter, not started.
	 * @param group the group whose lock to wait for
	 * @param locks the named locks
	 * @param listener the listener to tell, as it stands at each wake-up
	 * @param ended called with this waiter when its thread ends
	 */
	MariaDbWakeUpWaiter(String group, MariaDbNamedLocks locks, Supplier<@Nullable ReleaseListener> listener,
			Consumer<MariaDbWakeUpWaiter> ended) {
		this.group = group;
		this.locks = locks;
		this.listener = listener;
		this.ended = ended;
		this.thread = OwnThreads.daemon("leader-wake-" + group, this::run);
	}

	String group() {
		return this.group;
	}

	void start() {
		this.thread.start();
	}

	synchronized void observed(boolean othersHold) {
		this.othersHold = othersHold;
		this.fresh = true;
		notifyAll();
	}

	void stop() {
		Connection connection;
		synchronized (this) {
			this.stopped = true;
			connection = this.connection;
			notifyAll();
		}
		MariaDbNamedLocks.abort(connection, "the wake-up of " + this.group);
	}

	private void run() {
		try {
			while (true) {
				if (!isArmed()) {
					// Nothing to wait for until another node leads: the connection
					// goes back to the pool meanwhile.
					closeConnection();
				}
				if (!awaitArmed()) {
					return;
				}
				Connection connection = connection();
				if (connection == null) {
					return;
				}
				String name = this.locks.name(connection, this.group);
				int timeoutSeconds = this.locks.timeoutSeconds();
				Long got = await(connection, name, timeoutSeconds);
				if (got != null && got == FREE) {
					// Nobody to wait for.
					consumed();
					continue;
				}
				if (got != null && got == 1) {
					MariaDbNamedLocks.run(connection, "SELECT RELEASE_LOCK(?)", name, timeoutSeconds);
					consumed();
					ReleaseListener listener = this.listener.get();
					if (listener != null && !isStopped()) {
						listener.released(this.group, null);
					}
				}
			}
		}
		catch (SQLException | RuntimeException ex) {
			if (!isStopped()) {
				logger.debug("Wake-up wait of group " + this.group + " ended; the engine acquires on its own "
						+ "timing until the next heartbeat starts it again: " + ex);
			}
			// A failure may leave the lock it waited for held, as after a failed
			// RELEASE_LOCK.
			giveBackConnection();
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		finally {
			closeConnection();
			this.ended.accept(this);
		}
	}

	/**
	 * Waits for the group's lock if a session holds it, in one statement.
	 * @param connection the waiter's connection
	 * @param name the lock's name
	 * @param timeoutSeconds the query timeout, beside the wait
	 * @return {@code 1} if this connection got the lock, {@code 0} if the wait timed out,
	 * {@link #FREE} if no session held it, {@code null} if the wait was interrupted (a
	 * {@code KILL QUERY}), which {@code GET_LOCK} answers without an error
	 */
	private static @Nullable Long await(Connection connection, String name, int timeoutSeconds) throws SQLException {
		// IF evaluates only the branch it returns.
		return MariaDbNamedLocks.run(connection,
				"SET STATEMENT max_statement_time = 0 FOR SELECT IF(IS_USED_LOCK(?) " + "IS NULL, " + FREE
						+ ", GET_LOCK(?, " + MariaDbWakeUps.WAIT_SECONDS + "))",
				name, MariaDbWakeUps.WAIT_SECONDS + timeoutSeconds);
	}

	// Waits until another node holds the lease and something was learned since the
	// last wake-up; false once stopped.
	private synchronized boolean awaitArmed() throws InterruptedException {
		while (!this.stopped && !(this.othersHold && this.fresh)) {
			wait(TimeUnit.SECONDS.toMillis(MariaDbWakeUps.WAIT_SECONDS));
		}
		return !this.stopped;
	}

	private synchronized boolean isArmed() {
		return this.othersHold && this.fresh;
	}

	private synchronized void consumed() {
		this.fresh = false;
	}

	private synchronized boolean isStopped() {
		return this.stopped;
	}

	private @Nullable Connection connection() throws SQLException {
		synchronized (this) {
			if (this.connection != null) {
				return this.connection;
			}
		}
		Connection borrowed = this.locks.borrow();
		synchronized (this) {
			if (this.stopped) {
				OwnConnections.closeQuietly(borrowed);
				return null;
			}
			this.connection = borrowed;
			return borrowed;
		}
	}

	private void giveBackConnection() {
		Connection connection;
		synchronized (this) {
			connection = this.connection;
			this.connection = null;
		}
		if (connection != null) {
			MariaDbNamedLocks.giveBack(connection, this.locks.timeoutSeconds());
		}
	}

	private void closeConnection() {
		Connection connection;
		synchronized (this) {
			connection = this.connection;
			this.connection = null;
		}
		if (connection != null) {
			OwnConnections.closeQuietly(connection);
		}
	}

}
