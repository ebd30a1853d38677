package dev.leader.mariadb;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

import javax.sql.DataSource;

import dev.leader.jdbc.TablePrefix;
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
 * <b>Crash takeover</b> ({@code leader.lease.crash-takeover-groups}, {@link #bind}). Once
 * this node is granted (or renews) a term of such a group, the holding connection also
 * takes the lock of that term ({@link MariaDbSql#termLock}, one per term, so that a new
 * holder never waits for an old holder's lock, say of a paused process that keeps its
 * session) and records its {@code CONNECTION_ID()} in the lease's {@code session_id},
 * only if the lease is still this node's under that term and unexpired. An acquire takes
 * a bound lease over once that session no longer holds the lock
 * ({@link MariaDbSql#SESSION_GONE}). Followers need nothing more: the same session holds
 * the group's wake-up lock, whose waiters wake when it ends, and the acquire they start
 * decides. The holding session stays idle on the server, where the server notices a
 * client that died at once and releases its locks; a {@link MariaDbSessionWatcher} on a
 * connection of its own waits for a lock of that session, {@code <prefix>live:<id>}, and
 * gets it the instant the session ends, and this node then steps down from the terms it
 * bound ({@link ReleaseListener#sessionLost}). Every other way the holding connection is
 * given up (a failed statement, a failed ping of the heartbeat) gives the locks up too,
 * and steps down likewise. A term this node stepped down from this way is not bound
 * again.
 * <p>
 * <b>Nodes</b> ({@link #bind} with the daemons group among the groups, node death by
 * session). The holding session also takes the node's lock ({@link MariaDbSql#nodeLock})
 * and records its {@code CONNECTION_ID()} in the node's row ({@code session_id}), only
 * while the row is this process's incarnation, so that every read of the nodes counts the
 * node dead the moment that session ends ({@link MariaDbSql#NODE_SESSION}). The watcher
 * of the holding session watches it for the node too: when it ends, the node stops its
 * daemons ({@link ReleaseListener#nodeSessionLost}), and binds again on its next
 * heartbeat. Each node also waits for the node lock of the next bound node by id (a ring,
 * so that every bound node is watched by one other, whatever the size of the cluster), on
 * the {@code leader-session-node} thread, and when it gets it rings the leader of the
 * daemons group ({@link MariaDbBells}), whose cycle then moves the dead node's daemons.
 * <p>
 * Costs, where this node follows a group another node leads: a connection of the pool per
 * such group, kept while it is led by another node; on a leader, one connection that
 * holds the locks of all its groups, and with crash takeover a second one that watches
 * it, waiting in one statement per {@link MariaDbSessionWatcher#WAIT_SECONDS}. Binding a
 * term costs two statements after its grant. Thread-safe.
 */
final class MariaDbWakeUps {

	private static final Log logger = LogFactory.getLog(MariaDbWakeUps.class);

	/**
	 * Records the holding session in a lease of this node, under the term it took the
	 * lock of, only while the lease is this node's with that term and unexpired.
	 */
	private static final String BIND = """
			UPDATE ${prefix}leases SET session_id = CONNECTION_ID()
			WHERE group_name = ? AND term = ? AND holder = ? AND expires_at > ${now}""";

	/**
	 * The longest one {@code GET_LOCK} waits; the wait is repeated while the lease stays
	 * with another node.
	 */
	static final int WAIT_SECONDS = 10;

	/**
	 * How long a watch of the holding session that failed soon after it started waits
	 * before the next starts.
	 */
	private static final long WATCH_RETRY_MILLIS = 1000;

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

	private final String bindSql;

	private final String takeTermSql;

	private final String releaseTermSql;

	private final String takeLiveSql;

	private final String livePrefix;

	private volatile Set<String> bindGroups = Set.of();

	private final TablePrefix prefix;

	private final String takeNodeSql;

	private final String releaseNodeSql;

	private final String bindNodeSql;

	private final String nodeBoundSql;

	private final String nodeLockSql;

	private volatile @Nullable MariaDbBells bells;

	// Guarded by lock: whether the node's row is bound to the holding session (or its
	// bind is under way: bound if its reply was lost), whether its loss is yet to be
	// told to the listener, and the watcher of the next bound node, with its target.
	private boolean nodeBound;

	private boolean nodeLost;

	private @Nullable MariaDbSessionWatcher nextWatcher;

	private @Nullable String nextTarget;

	// Guarded by lock: the terms bound on the holding connection, by group; the terms
	// this node stepped down from when their session was lost; those not yet told to the
	// listener; the watcher of the holding session.
	private final Map<String, Long> bound = new TreeMap<>();

	private final Map<String, Long> lostTerms = new TreeMap<>();

	private final Map<String, Long> unreported = new TreeMap<>();

	private @Nullable MariaDbSessionWatcher watcher;

	// Guarded by lock: the name of the holding session's own lock, once taken.
	private @Nullable String liveLock;

	/**
	 * Creates the wake-ups of a node's store.
	 * @param dataSource the MariaDB data source whose connections wait and hold
	 * @param prefix the table prefix, which starts the locks' names
	 * @param timeoutSeconds the query timeout of the statements that do not wait
	 */
	MariaDbWakeUps(DataSource dataSource, TablePrefix prefix, int timeoutSeconds) {
		this.locks = new MariaDbNamedLocks(dataSource, prefix, timeoutSeconds);
		this.timeoutSeconds = timeoutSeconds;
		this.bindSql = MariaDbSql.render(prefix, BIND);
		this.takeTermSql = MariaDbSql.render(prefix, "SELECT GET_LOCK(" + MariaDbSql.termLock("?", "?") + ", 0)");
		this.releaseTermSql = MariaDbSql.render(prefix, "SELECT RELEASE_LOCK(" + MariaDbSql.termLock("?", "?") + ")");
		this.takeLiveSql = MariaDbSql.render(prefix,
				"SELECT GET_LOCK(CONCAT('${prefix}live:', CONNECTION_ID()), 0), CONNECTION_ID()");
		this.livePrefix = prefix.render("${prefix}") + "live:";
		this.prefix = prefix;
		this.takeNodeSql = MariaDbSql.render(prefix, "SELECT GET_LOCK(" + MariaDbSql.nodeLock("?") + ", 0)");
		this.releaseNodeSql = MariaDbSql.render(prefix, "SELECT RELEASE_LOCK(" + MariaDbSql.nodeLock("?") + ")");
		this.bindNodeSql = MariaDbSql.render(prefix,
				"UPDATE ${prefix}nodes SET session_id = CONNECTION_ID() WHERE node_id = ? AND incarnation = ?");
		// Read back, since the update's count may be of rows changed.
		this.nodeBoundSql = MariaDbSql.render(prefix, "SELECT 1 FROM ${prefix}nodes WHERE node_id = ? "
				+ "AND incarnation = ? AND session_id = CONNECTION_ID()");
		this.nodeLockSql = MariaDbSql.render(prefix, "SELECT " + MariaDbSql.nodeLock("?"));
	}

	/**
	 * Binds the leases of the given groups that this node is granted to its holding
	 * session, for crash takeover, and the node itself when the daemons group is one of
	 * them. Call it before the store is used.
	 * @param groups the groups ({@code leader.lease.crash-takeover-groups})
	 * @param daemonsGroup the group whose leader assigns the daemons
	 */
	void bind(Collection<String> groups, String daemonsGroup) {
		this.bindGroups = Set.copyOf(groups);
		if (groups.contains(daemonsGroup)) {
			this.bells = new MariaDbBells(this.locks, this.prefix, daemonsGroup);
		}
	}

	/**
	 * Tells whether a grant of the group binds the lease to the holding session.
	 * @param group the group
	 * @return whether the group is a crash-takeover group
	 */
	boolean binds(String group) {
		return this.bindGroups.contains(group);
	}

	/**
	 * Returns the doorbells of the daemon store, where nodes are bound.
	 * @return the bells, or {@code null} if nodes are not bound
	 */
	@Nullable MariaDbBells bells() {
		return this.bells;
	}

	/**
	 * Learns the other nodes' bound sessions, from a heartbeat of this node, if nodes are
	 * bound: binds this node's row unless it is bound, and waits for the session of the
	 * next bound node by id. Does nothing unless a listener {@linkplain #listen listens}.
	 * @param nodeId this node
	 * @param incarnation this node's process ({@code HeartbeatRows.incarnation})
	 * @param sessions the other live nodes' bound sessions, by node, and this node's own
	 * as its row reads it
	 */
	void members(String nodeId, String incarnation, Map<String, Long> sessions) {
		MariaDbBells bells = this.bells;
		if (bells == null) {
			return;
		}
		try {
			synchronized (this.lock) {
				if (this.listener == null) {
					return;
				}
				if (this.nodeBound && sessions.getOrDefault(nodeId, 0L) <= 0) {
					// The row was forgotten while this node was paused and registered
					// again, unbound, or its binding no longer holds: bind it again.
					this.nodeBound = false;
				}
				if (!this.nodeBound) {
					bindNode(nodeId, incarnation);
				}
				bells.node(nodeId, this.nodeBound);
				TreeMap<String, Long> ring = new TreeMap<>(sessions);
				ring.remove(nodeId);
				Map.Entry<String, Long> next = ring.higherEntry(nodeId);
				if (next == null) {
					next = ring.firstEntry();
				}
				String target = (next != null) ? next.getKey() + "@" + next.getValue() : null;
				if (!Objects.equals(target, this.nextTarget)) {
					stopNextWatcher();
					this.nextTarget = target;
					if (next != null) {
						watchNext(next.getKey());
					}
				}
			}
		}
		finally {
			reportLost();
		}
	}

	// Binds the node's row to the holding session; a failure leaves it unbound, and the
	// next heartbeat tries again.
	private void bindNode(String nodeId, String incarnation) {
		try {
			Connection connection = this.holding;
			if (connection == null) {
				connection = this.locks.borrow();
				this.holding = connection;
			}
			// Without waiting: another node's watcher holds it for an instant once this
			// node's last session ended.
			if (!Long.valueOf(1).equals(nodeLock(connection, this.takeNodeSql, nodeId))) {
				return;
			}
			// A bind whose reply is lost may have committed: until it answers, the node
			// counts as bound, so that losing the session stops its daemons.
			this.nodeBound = true;
			boolean bound;
			try (PreparedStatement statement = connection.prepareStatement(this.bindNodeSql)) {
				statement.setQueryTimeout(this.timeoutSeconds);
				statement.setString(1, nodeId);
				statement.setString(2, incarnation);
				statement.executeUpdate();
			}
			try (PreparedStatement statement = connection.prepareStatement(this.nodeBoundSql)) {
				statement.setQueryTimeout(this.timeoutSeconds);
				statement.setString(1, nodeId);
				statement.setString(2, incarnation);
				try (ResultSet row = statement.executeQuery()) {
					bound = row.next();
				}
			}
			if (!bound) {
				// The row is another process's: the node's death is seen by its
				// heartbeat only, until a later heartbeat binds it.
				this.nodeBound = false;
				nodeLock(connection, this.releaseNodeSql, nodeId);
				return;
			}
			if (this.watcher == null) {
				watch(connection);
			}
			logger.debug("Leader node " + nodeId + " bound to its session");
		}
		catch (SQLException ex) {
			dropHolding("bind node " + nodeId + " to the holding session", ex);
		}
	}

	private @Nullable Long nodeLock(Connection connection, String sql, String nodeId) throws SQLException {
		try (PreparedStatement statement = connection.prepareStatement(sql)) {
			statement.setQueryTimeout(this.timeoutSeconds);
			// The name's expression repeats the node id three times.
			for (int i = 1; i <= 3; i++) {
				statement.setString(i, nodeId);
			}
			try (ResultSet row = statement.executeQuery()) {
				row.next();
				long value = row.getLong(1);
				return row.wasNull() ? null : value;
			}
		}
	}

	// Waits for the node lock of another node, whose session holds it while it lives.
	private void watchNext(String nodeId) {
		MariaDbSessionWatcher watcher = new MariaDbSessionWatcher(this.locks, "leader-session-node", (connection) -> {
			try (PreparedStatement statement = connection.prepareStatement(this.nodeLockSql)) {
				statement.setQueryTimeout(this.timeoutSeconds);
				for (int i = 1; i <= 3; i++) {
					statement.setString(i, nodeId);
				}
				try (ResultSet row = statement.executeQuery()) {
					row.next();
					return row.getString(1);
				}
			}
		}, new MariaDbSessionWatcher.Outcome() {

			@Override
			public void ended(MariaDbSessionWatcher watcher) {
				nextEnded(watcher, nodeId, true);
			}

			@Override
			public void failed(MariaDbSessionWatcher watcher) {
				nextEnded(watcher, nodeId, false);
			}

		}, 0);
		this.nextWatcher = watcher;
		watcher.start();
	}

	// Called on the watcher's thread. The target stays, so that it is not watched again
	// before a heartbeat reads it dead; after a failed watch it is forgotten, so that the
	// next heartbeat watches it again.
	private void nextEnded(MariaDbSessionWatcher watcher, String nodeId, boolean ended) {
		synchronized (this.lock) {
			if (this.nextWatcher != watcher) {
				return;
			}
			this.nextWatcher = null;
			if (!ended) {
				this.nextTarget = null;
				return;
			}
		}
		logger.info("Leader node " + nodeId + " lost the database session that binds it: waking the leader of the "
				+ "daemons, which gives its daemons to other nodes");
		MariaDbBells bells = this.bells;
		if (bells != null) {
			bells.ringLeader();
		}
	}

	private void stopNextWatcher() {
		MariaDbSessionWatcher watcher = this.nextWatcher;
		this.nextWatcher = null;
		if (watcher != null) {
			watcher.stop();
		}
	}

	/**
	 * Learns how a lease stands, from an acquire or a heartbeat of this node: takes the
	 * group's lock when this node holds the lease, gives it back when it no longer does,
	 * and has a waiter wait for the lock while another node holds it. Does nothing unless
	 * a listener {@linkplain #listen listens}, as the engine's does while it runs, so
	 * that a store used without an engine keeps no connection.
	 * @param lease the lease as read
	 * @param nodeId this node
	 * @param renewed whether this node was just granted or renewed the lease, which binds
	 * it to the holding session if its group is a crash-takeover group; a lease merely
	 * read with this node as its holder may be one it stepped down from
	 */
	void observed(LeaseState lease, String nodeId, boolean renewed) {
		try {
			observe(lease, nodeId, renewed);
		}
		finally {
			reportLost();
		}
	}

	private void observe(LeaseState lease, String nodeId, boolean renewed) {
		synchronized (this.lock) {
			if (this.listener == null) {
				return;
			}
		}
		boolean mine = nodeId.equals(lease.holder()) && !lease.remaining().isNegative() && !lease.remaining().isZero();
		if (mine) {
			hold(lease.group(), nodeId);
			if (renewed && this.bindGroups.contains(lease.group())) {
				bindTerm(lease.group(), lease.term(), nodeId);
			}
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
		try {
			ping();
		}
		finally {
			reportLost();
		}
	}

	private void ping() {
		synchronized (this.lock) {
			Connection connection = this.holding;
			if (connection == null || (this.held.isEmpty() && this.bound.isEmpty() && !this.nodeBound)) {
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
		try {
			release(nodeId, groups);
		}
		finally {
			reportLost();
		}
	}

	private void release(String nodeId, Iterable<String> groups) {
		synchronized (this.lock) {
			Connection connection = this.holding;
			for (String group : groups) {
				Long term = this.bound.get(group);
				if (connection != null && term != null) {
					this.bound.remove(group);
					try {
						releaseTerm(connection, group, term);
					}
					catch (SQLException ex) {
						dropHolding("release the session lock of " + group, ex);
						return;
					}
				}
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
			if (this.held.isEmpty() && this.bound.isEmpty() && this.listener == null) {
				disconnect();
			}
			else if (this.bound.isEmpty() && !this.nodeBound) {
				stopWatcher();
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
				stopNextWatcher();
				this.nextTarget = null;
			}
			stopped.values().forEach(MariaDbWakeUpWaiter::stop);
			// The held locks stay until the leases are released (the engine stops
			// listening first), or the store disconnects.
			synchronized (this.lock) {
				if (this.held.isEmpty() && this.bound.isEmpty()) {
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
			// The watcher first: giving the holding session's locks back would wake it.
			stopWatcher();
			Connection connection = this.holding;
			this.holding = null;
			this.liveLock = null;
			this.held.clear();
			this.bound.clear();
			this.nodeBound = false;
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

	// Binds a term this node was granted or renewed to the holding session; a failure
	// leaves it unbound, and the next renewal tries again.
	private void bindTerm(String group, long term, String nodeId) {
		synchronized (this.lock) {
			Long current = this.bound.get(group);
			Long lost = this.lostTerms.get(group);
			if (lost != null && lost >= term) {
				return;
			}
			try {
				if (current != null && current == term) {
					// Bound, so the holding connection is there; a watch that failed
					// starts again, at most once per renewal.
					if (this.watcher == null && this.holding != null) {
						watch(this.holding);
					}
					return;
				}
				Connection connection = this.holding;
				if (connection == null) {
					connection = this.locks.borrow();
					this.holding = connection;
				}
				if (current != null) {
					this.bound.remove(group);
					releaseTerm(connection, group, current);
				}
				if (this.watcher == null) {
					watch(connection);
				}
				if (!Long.valueOf(1).equals(termLock(connection, this.takeTermSql, group, term))) {
					return;
				}
				// A bind whose reply is lost may have committed: until it answers, the
				// term counts as bound, so that losing the session steps down from it.
				this.bound.put(group, term);
				int updated;
				try (PreparedStatement statement = connection.prepareStatement(this.bindSql)) {
					statement.setQueryTimeout(this.timeoutSeconds);
					statement.setString(1, group);
					statement.setLong(2, term);
					statement.setString(3, nodeId);
					updated = statement.executeUpdate();
				}
				if (updated != 1) {
					this.bound.remove(group);
					releaseTerm(connection, group, term);
				}
			}
			catch (SQLException ex) {
				dropHolding("bind the lease of " + group + " to the holding session", ex);
			}
		}
	}

	// Takes the holding session's own lock, once per session, and starts the watcher
	// that waits for it.
	private void watch(Connection connection) throws SQLException {
		watch(connection, 0);
	}

	private void watch(Connection connection, long delayMillis) throws SQLException {
		String live = this.liveLock;
		if (live == null) {
			try (PreparedStatement statement = connection.prepareStatement(this.takeLiveSql)) {
				statement.setQueryTimeout(this.timeoutSeconds);
				try (ResultSet row = statement.executeQuery()) {
					row.next();
					if (row.getLong(1) != 1) {
						throw new SQLException("the holding session's own lock is taken");
					}
					live = this.livePrefix + row.getLong(2);
				}
			}
			this.liveLock = live;
		}
		MariaDbSessionWatcher watcher = new MariaDbSessionWatcher(this.locks, live,
				new MariaDbSessionWatcher.Outcome() {

					@Override
					public void ended(MariaDbSessionWatcher watcher) {
						sessionEnded(watcher, null);
					}

					@Override
					public void failed(MariaDbSessionWatcher watcher) {
						sessionEnded(watcher, watcher);
					}

				}, delayMillis);
		this.watcher = watcher;
		watcher.start();
	}

	// Called on the watcher's thread. A failed watch pings the holding session, which
	// may live.
	private void sessionEnded(MariaDbSessionWatcher ended, @Nullable MariaDbSessionWatcher failed) {
		try {
			synchronized (this.lock) {
				if (this.watcher != ended) {
					return;
				}
				this.watcher = null;
				if (failed == null) {
					dropHolding("keep the holding session", new SQLException("the holding session ended"));
					return;
				}
				// The watch failed, not the session: if the session lives, watch it
				// again at once, since its end would otherwise go unnoticed until the
				// next heartbeat's ping.
				Connection connection = this.holding;
				try {
					if (connection == null || !connection.isValid(this.timeoutSeconds)) {
						dropHolding("keep the holding session", new SQLException("the holding session ended"));
					}
					else if (!this.bound.isEmpty() || this.nodeBound) {
						// At once, unless watches keep failing as soon as they start.
						watch(connection, (failed.ranMillis() < WATCH_RETRY_MILLIS) ? WATCH_RETRY_MILLIS : 0);
					}
				}
				catch (SQLException ex) {
					dropHolding("keep the holding session", ex);
				}
			}
		}
		finally {
			reportLost();
		}
	}

	private void stopWatcher() {
		MariaDbSessionWatcher watcher = this.watcher;
		this.watcher = null;
		if (watcher != null) {
			watcher.stop();
		}
	}

	private void releaseTerm(Connection connection, String group, long term) throws SQLException {
		termLock(connection, this.releaseTermSql, group, term);
	}

	private @Nullable Long termLock(Connection connection, String sql, String group, long term) throws SQLException {
		try (PreparedStatement statement = connection.prepareStatement(sql)) {
			statement.setQueryTimeout(this.timeoutSeconds);
			// The name's expression repeats its parts three times.
			for (int i = 0; i < 3; i++) {
				statement.setString(2 * i + 1, group);
				statement.setLong(2 * i + 2, term);
			}
			try (ResultSet row = statement.executeQuery()) {
				row.next();
				long value = row.getLong(1);
				return row.wasNull() ? null : value;
			}
		}
	}

	// Tells the listener of the terms, and the node's binding, lost with the holding
	// session, outside the lock.
	private void reportLost() {
		Map<String, Long> lost;
		boolean nodeLost;
		synchronized (this.lock) {
			if (this.unreported.isEmpty() && !this.nodeLost) {
				return;
			}
			lost = new TreeMap<>(this.unreported);
			nodeLost = this.nodeLost;
			this.unreported.clear();
			this.nodeLost = false;
		}
		ReleaseListener listener = this.listener;
		if (listener != null && !lost.isEmpty()) {
			listener.sessionLost(lost);
		}
		if (listener != null && nodeLost) {
			listener.nodeSessionLost();
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
		stopWatcher();
		if (!this.bound.isEmpty()) {
			// The terms' locks go with the session: others may take them over.
			logger.warn("Lost the database session that bound the leases " + this.bound + " ("
					+ "leader.lease.crash-takeover-groups): stepping down from them");
			this.lostTerms.putAll(this.bound);
			this.unreported.putAll(this.bound);
			this.bound.clear();
		}
		if (this.nodeBound) {
			// The node's lock goes with the session: others count the node dead.
			logger.warn("Lost the database session that bound this node (leader.lease.crash-takeover-groups names "
					+ "the daemons group): stopping its daemons, which other nodes may be given at once");
			this.nodeLost = true;
			this.nodeBound = false;
		}
		Connection connection = this.holding;
		this.holding = null;
		this.liveLock = null;
		this.held.clear();
		if (connection != null) {
			MariaDbNamedLocks.giveBack(connection, this.timeoutSeconds);
		}
	}

}
