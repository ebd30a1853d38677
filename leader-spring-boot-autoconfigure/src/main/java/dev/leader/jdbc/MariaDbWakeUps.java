package dev.leader.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import javax.sql.DataSource;

import dev.leader.lease.CoordinationStore.ReleaseListener;
import dev.leader.lease.LeaseState;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * The hand-over wake-up of the MariaDB stores, which have no notifications: a hint, never
 * a decision. The holder of a group's lease holds the named lock
 * {@code <prefix>wake:<database>:<group>} ({@code GET_LOCK}, scoped to a session, not to
 * a transaction, {@link MariaDbNamedLocks}) on a connection it keeps; a node that follows
 * the group waits for that lock on a connection of its own ({@link MariaDbWakeUpWaiter}).
 * When the holder releases the lease, it releases the lock after the release commits, and
 * when its session ends (a crash, a kill), the server releases it: the waiting node gets
 * the lock, gives it back at once and tells its listener, which tries to acquire.
 * Correctness stays with the lease rows: a wake-up whose acquire is refused costs one
 * attempt.
 * <p>
 * Waiting never polls: a node waits only while the lock is held, for at most
 * {@link #WAIT_SECONDS} per statement. After a wake-up, or when it finds the lock free
 * while another node holds the lease (a holder that died, or one that has not taken the
 * lock yet), it waits again only after the next thing the store learns of the lease: an
 * acquire's outcome or a heartbeat, at most one statement per renew interval.
 * <p>
 * Costs, where this node follows a group another node leads: a connection of the pool per
 * such group, kept while it is led by another node; on a leader, one connection that
 * holds the locks of all its groups. Thread-safe.
 */
final class MariaDbWakeUps {

	private static final Log logger = LogFactory.getLog(MariaDbWakeUps.class);

	/**
	 * The longest one {@code GET_LOCK} waits; the wait is repeated while the lease stays
	 * with another node.
	 */
	static final int WAIT_SECONDS = 10;

	private final MariaDbNamedLocks locks;

	private final int timeoutSeconds;

	private final Object lock = new Object();

	// Guarded by lock: the connection that holds this node's locks, and the groups whose
	// lock it holds, with the node that holds each lease.
	private @Nullable Connection holding;

	private final Map<String, String> held = new TreeMap<>();

	// Guarded by lock.
	private final Map<String, MariaDbWakeUpWaiter> waiters = new LinkedHashMap<>();

	private volatile @Nullable ReleaseListener listener;

	/**
	 * Creates the wake-ups of a node's store.
	 * @param dataSource the MariaDB data source whose connections wait and hold
	 * @param prefix the table prefix, which starts the locks' names
	 * @param timeoutSeconds the query timeout of the statements that do not wait
	 */
	MariaDbWakeUps(DataSource dataSource, TablePrefix prefix, int timeoutSeconds) {
		this.locks = new MariaDbNamedLocks(dataSource, prefix, timeoutSeconds);
		this.timeoutSeconds = timeoutSeconds;
	}

	/**
	 * Learns how a lease stands, from an acquire or a heartbeat of this node: takes the
	 * group's lock when this node holds the lease, gives it back when it no longer does,
	 * and has a waiter wait for the lock while another node holds it. Does nothing unless
	 * a listener {@linkplain #listen listens}, as the engine's does while it runs, so
	 * that a store used without an engine keeps no connection.
	 * @param lease the lease as read
	 * @param nodeId this node
	 */
	void observed(LeaseState lease, String nodeId) {
		synchronized (this.lock) {
			if (this.listener == null) {
				return;
			}
		}
		boolean mine = nodeId.equals(lease.holder()) && !lease.remaining().isNegative() && !lease.remaining().isZero();
		if (mine) {
			hold(lease.group(), nodeId);
		}
		else {
			giveBack(nodeId, Set.of(lease.group()));
		}
		MariaDbWakeUpWaiter waiter;
		synchronized (this.lock) {
			if (this.listener == null) {
				return;
			}
			boolean others = lease.holder() != null && !mine && lease.remaining().toMillis() > 0;
			waiter = this.waiters.get(lease.group());
			if (waiter == null && others) {
				waiter = new MariaDbWakeUpWaiter(lease.group(), this.locks, () -> this.listener, this::ended);
				this.waiters.put(lease.group(), waiter);
				waiter.start();
			}
		}
		if (waiter != null) {
			waiter.observed(lease.holder() != null && !mine && lease.remaining().toMillis() > 0);
		}
	}

	/**
	 * Checks that the connection holding this node's locks is still alive, with a ping,
	 * and forgets the locks if it is not (its session ended, and the server released
	 * them), so that the observations that follow take them again. Called once per
	 * heartbeat, before its observations.
	 */
	void checkHolding() {
		synchronized (this.lock) {
			Connection connection = this.holding;
			if (connection == null || this.held.isEmpty()) {
				return;
			}
			try {
				if (connection.isValid(this.timeoutSeconds)) {
					return;
				}
				dropHolding("keep the wake-up locks", new SQLException("the holding session ended"));
			}
			catch (SQLException ex) {
				dropHolding("keep the wake-up locks", ex);
			}
		}
	}

	/**
	 * Gives the locks of groups back, once their release has committed, which wakes the
	 * nodes that wait for them.
	 * @param nodeId the node that held the leases
	 * @param groups the groups
	 */
	void giveBack(String nodeId, Iterable<String> groups) {
		synchronized (this.lock) {
			Connection connection = this.holding;
			for (String group : groups) {
				if (connection != null && nodeId.equals(this.held.get(group))) {
					this.held.remove(group);
					try {
						MariaDbNamedLocks.run(connection, "SELECT RELEASE_LOCK(?)", this.locks.name(connection, group),
								this.timeoutSeconds);
					}
					catch (SQLException ex) {
						dropHolding("release the wake-up lock of " + group, ex);
						return;
					}
				}
			}
			if (this.held.isEmpty() && this.listener == null) {
				disconnect();
			}
		}
	}

	/**
	 * Starts telling the listener of released leases, and holding the locks of the leases
	 * this node is granted.
	 * @param listener called on a {@code leader-wake-<group>} thread
	 * @return a handle that stops the waiters; the locks held stay until their leases are
	 * released or the store disconnects, so that the nodes waiting for them wake after
	 * the release, not before
	 */
	AutoCloseable listen(ReleaseListener listener) {
		synchronized (this.lock) {
			this.listener = listener;
		}
		return () -> {
			Map<String, MariaDbWakeUpWaiter> stopped;
			synchronized (this.lock) {
				this.listener = null;
				stopped = new LinkedHashMap<>(this.waiters);
				this.waiters.clear();
			}
			stopped.values().forEach(MariaDbWakeUpWaiter::stop);
			// The held locks stay until the leases are released (the engine stops
			// listening first), or the store disconnects.
			synchronized (this.lock) {
				if (this.held.isEmpty()) {
					disconnect();
				}
			}
		};
	}

	/**
	 * Releases the locks this node still holds, and gives back the connection that held
	 * them.
	 */
	void disconnect() {
		synchronized (this.lock) {
			Connection connection = this.holding;
			this.holding = null;
			this.held.clear();
			if (connection != null) {
				MariaDbNamedLocks.giveBack(connection, this.timeoutSeconds);
			}
		}
	}

	private void hold(String group, String nodeId) {
		synchronized (this.lock) {
			if (this.held.containsKey(group)) {
				return;
			}
			try {
				Connection connection = this.holding;
				if (connection == null) {
					connection = this.locks.borrow();
					this.holding = connection;
				}
				// Without waiting: a waiter that holds the lock for an instant gives it
				// back at once, and the next heartbeat tries again.
				if (MariaDbNamedLocks.run(connection, "SELECT GET_LOCK(?, 0)", this.locks.name(connection, group),
						this.timeoutSeconds) == 1) {
					this.held.put(group, nodeId);
				}
			}
			catch (SQLException ex) {
				dropHolding("take the wake-up lock of " + group, ex);
			}
		}
	}

	private void ended(MariaDbWakeUpWaiter waiter) {
		synchronized (this.lock) {
			this.waiters.remove(waiter.group(), waiter);
		}
	}

	// After a failed statement the connection may still hold locks, whatever this.held
	// says: it never goes back to the pool with them.
	private void dropHolding(String task, SQLException ex) {
		logger.debug("Could not " + task + "; the next heartbeat tries again: " + ex);
		Connection connection = this.holding;
		this.holding = null;
		this.held.clear();
		if (connection != null) {
			MariaDbNamedLocks.giveBack(connection, this.timeoutSeconds);
		}
	}

}
