package dev.leader.postgres;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

import dev.leader.jdbc.OwnConnections;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.CoordinationStore.ReleaseListener;
import dev.leader.node.OwnThreads;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * Crash takeover on PostgreSQL ({@code leader.lease.crash-takeover-groups}): binds the
 * leases of those groups to a session of their holder, so that a follower takes one over
 * the moment that session ends, and the holder stops leading the moment it notices.
 * <p>
 * <b>Holder.</b> The session is the node's listening connection
 * ({@link NotificationHub}), which a thread reads at all times: a session that the server
 * ends (a kill, a restart) shows there at once. Once it has been granted a term, the
 * holder takes the session-level advisory lock ({@link #groupKey group key}, term) on it
 * and records the session's backend in the lease ({@code session_pid}). A lock per term
 * means that a new holder never has to wait for an old one's lock. When that session
 * ends, the node steps down from every term it bound
 * ({@link ReleaseListener#sessionLost}); a lock of a term it no longer holds is given
 * back on the next heartbeat.
 * <p>
 * <b>Followers.</b> A node that reads a bound lease of such a group held by another node
 * waits for the lock on a connection of its own, in one statement that blocks on the
 * server ({@code pg_advisory_lock_shared} and then its unlock, so that it holds nothing
 * after), and acquires the moment it returns. The acquire grants only if, in
 * {@code pg_locks}, the holder's session no longer holds the lock ({@link CoordinationSql
 * #ACQUIRE}): a wake-up is a hint, the statement decides. A waiter that learns of a new
 * term or holder cancels its statement and waits again for that one.
 * <p>
 * <b>Nodes.</b> When the daemons group is a crash-takeover group, the node binds its row
 * of the nodes table to the same session, with the session-level advisory lock
 * ({@link TablePrefix#nodesLockKey() nodes key}, the session's backend), which no other
 * live session can hold, so that every read of the nodes counts it dead the moment that
 * session ends ({@code Statements.NODE_SESSION}), and the daemons it ran move at once.
 * Each node waits for the session of one other live bound node, the next one by id (a
 * ring, so that every bound node is watched by one other, whatever the size of the
 * cluster), and notifies the assignments channel when it ends, which starts the daemons
 * leader's cycle. A node whose session ends while it lives stops its daemons at once
 * ({@link ReleaseListener#nodeSessionLost}), and binds again on its next session.
 * <p>
 * <b>Waits.</b> Each wait runs in a transaction of its own that first lifts the lock and
 * statement timeouts of the application's settings and, from PostgreSQL 14, has the
 * server check the client's connection every second while it waits, so that a waiter
 * whose process died does not stay queued on the server.
 * <p>
 * Costs: no statement while nothing changes; one connection of the pool per such group
 * that another node leads, on each follower, and one on each node that binds nodes.
 * Thread-safe.
 */
final class PostgresSessions implements NotificationHub.Session {

	private static final Log logger = LogFactory.getLog(PostgresSessions.class);

	/**
	 * The longest one wait statement blocks; it is repeated while the same session holds
	 * the lease.
	 */
	private static final int WAIT_SECONDS = 3600;

	private static final String BIND = """
			WITH locked AS (SELECT pg_try_advisory_lock(?, ?) AS ok)
			UPDATE ${prefix}leases l SET session_pid = pg_backend_pid()
			FROM locked, (SELECT set_config('synchronous_commit', 'off', true)) AS relaxed
			WHERE locked.ok AND l.group_name = ? AND l.term = ? AND l.holder = ?
			  AND l.expires_at > clock_timestamp()
			RETURNING l.group_name""";

	/**
	 * Binds the node's row to the session: takes the node's lock and records the session
	 * in the row, only while the row is still this process's.
	 */
	private static final String BIND_NODE = """
			WITH locked AS (SELECT pg_try_advisory_lock(${nodes_key}, pg_backend_pid()) AS ok)
			UPDATE ${prefix}nodes n SET session_pid = pg_backend_pid(), session_server = pg_postmaster_start_time()
			FROM locked, (SELECT set_config('synchronous_commit', 'off', true)) AS relaxed
			WHERE locked.ok AND n.node_id = ? AND n.incarnation = ?
			RETURNING n.session_pid""";

	private static final String UNLOCK_NODE = "SELECT pg_advisory_unlock(${nodes_key}, pg_backend_pid())";

	/**
	 * Sets a wait's transaction up: the server's lock and statement timeouts of the
	 * application's settings do not apply to the wait (its own bound is
	 * {@link #WAIT_SECONDS}), and a client that died ends it.
	 */
	private static final String PREPARE_WAIT = """
			SELECT set_config('lock_timeout', '0', true), set_config('statement_timeout', '0', true),
			       CASE WHEN current_setting('client_connection_check_interval', true) IS NOT NULL
			         THEN set_config('client_connection_check_interval', '1000', true) END""";

	/**
	 * Waits for a lock and gives it back at once.
	 */
	private static final String WAIT = "SELECT pg_advisory_lock_shared(?, ?), pg_advisory_unlock_shared(?, ?)";

	/**
	 * The name of the waiter for the next node's session: not a group name, which has no
	 * {@code /}.
	 */
	private static final String NODE_WAITER = "/node";

	private final OwnConnections connections;

	private final String prefix;

	private final String bindSql;

	private final Set<String> groups;

	private final boolean bindsNode;

	private final String bindNodeSql;

	private final String unlockNodeSql;

	private final int nodesKey;

	private final String assignmentsChannel;

	private volatile String nodeId = "";

	private volatile String incarnation = "";

	// Guarded by this: whether the node's row is to be bound on the session, is bound on
	// it, or its bind is under way (bound if its reply was lost).
	private boolean nodeToBind;

	private boolean nodeBound;

	private boolean nodeBinding;

	// Guarded by this: the backend of the session the row was bound to.
	private long boundSession;

	// Guarded by this: the terms to bind on the session, the terms bound on it, and the
	// locks to give back.
	private final Map<String, Long> toBind = new TreeMap<>();

	private final Map<String, Long> bound = new TreeMap<>();

	// Guarded by this: the term whose bind is under way, bound if its reply was lost.
	private Map.@Nullable Entry<String, Long> binding;

	// Set on the session's connection once it binds, so that an idle_session_timeout
	// does not end the session that holds the locks; reset before it goes back.
	private boolean idleTimeoutOff;

	private boolean sessionSet;

	private final Map<String, Long> toUnbind = new TreeMap<>();

	// Guarded by this.
	private final Map<String, Waiter> waiters = new HashMap<>();

	private volatile @Nullable ReleaseListener listener;

	/**
	 * Creates the sessions of a node's store.
	 * @param connections the store's connections, which the followers wait on
	 * @param prefix the table prefix
	 * @param groups the crash-takeover groups
	 * @param bindsNode whether the node binds its row of the nodes table too, and watches
	 * another node's: the daemons group is one of the groups
	 */
	PostgresSessions(OwnConnections connections, TablePrefix prefix, Collection<String> groups, boolean bindsNode) {
		this.connections = connections;
		this.prefix = prefix.render("${prefix}");
		this.bindSql = prefix.render(BIND);
		this.groups = Set.copyOf(groups);
		this.bindsNode = bindsNode;
		this.bindNodeSql = prefix.render(BIND_NODE);
		this.unlockNodeSql = prefix.render(UNLOCK_NODE);
		this.nodesKey = prefix.nodesLockKey();
		this.assignmentsChannel = prefix.channel("assignments");
	}

	/**
	 * Returns the first key of a group's advisory locks: the hash of the table prefix and
	 * the group name, in the positive range of an {@code int}, where {@code pg_locks}
	 * shows it as the same number. Two groups that share a key only make each other's
	 * followers wait longer: a lock is exclusive, so the holder's session holding it is
	 * what the acquire checks.
	 * @param prefix the rendered table prefix
	 * @param group the group
	 * @return the key
	 */
	static int groupKey(String prefix, String group) {
		return (prefix + group).hashCode() & Integer.MAX_VALUE;
	}

	int groupKey(String group) {
		return groupKey(this.prefix, group);
	}

	/**
	 * Returns the second key of a term's advisory lock: its low 31 bits.
	 * @param term the term
	 * @return the key
	 */
	static int termKey(long term) {
		return (int) (term & Integer.MAX_VALUE);
	}

	boolean covers(String group) {
		return this.groups.contains(group);
	}

	void listen(@Nullable ReleaseListener listener) {
		this.listener = listener;
		if (listener == null) {
			stopWaiters();
		}
	}

	/**
	 * Learns that this node holds the term, from a grant or a renewal: binds it on the
	 * session unless it is bound already.
	 * @param group the group
	 * @param term the term
	 * @param nodeId this node
	 */
	synchronized void held(String group, long term, String nodeId) {
		this.nodeId = nodeId;
		if (covers(group) && !Objects.equals(this.bound.get(group), term)) {
			this.toBind.put(group, term);
		}
		Waiter waiter = this.waiters.get(group);
		if (waiter != null) {
			waiter.target(null);
		}
	}

	/**
	 * Learns that this node holds none of the given groups' terms: gives their locks
	 * back.
	 * @param heldGroups the groups this node holds
	 */
	synchronized void notHeldExcept(Collection<String> heldGroups) {
		for (Map.Entry<String, Long> entry : this.bound.entrySet()) {
			if (!heldGroups.contains(entry.getKey())) {
				this.toUnbind.put(entry.getKey(), entry.getValue());
			}
		}
		this.toBind.keySet().retainAll(heldGroups);
	}

	/**
	 * Learns that this node released the groups: gives their locks back.
	 * @param released the groups
	 */
	synchronized void released(Collection<String> released) {
		for (String group : released) {
			Long term = this.bound.get(group);
			if (term != null) {
				this.toUnbind.put(group, term);
			}
			this.toBind.remove(group);
		}
	}

	/**
	 * Learns how a lease stands, from a heartbeat: waits for the holder's session when
	 * another node holds it bound, and stops waiting otherwise.
	 * @param group the group
	 * @param holder the holder, or {@code null}
	 * @param term the term
	 * @param sessionPid the backend of the session it is bound to, or {@code null}
	 */
	synchronized void observed(String group, @Nullable String holder, long term, @Nullable Long sessionPid) {
		if (!covers(group) || this.listener == null) {
			return;
		}
		boolean others = holder != null && !holder.equals(this.nodeId) && sessionPid != null;
		Waiter waiter = this.waiters.get(group);
		if (others && waiter == null) {
			waiter = new Waiter(group);
			this.waiters.put(group, waiter);
			waiter.start();
		}
		if (waiter != null) {
			waiter.target(others ? new Target(groupKey(group), termKey(term), sessionPid) : null);
		}
	}

	/**
	 * Learns the other nodes' bound sessions, from a heartbeat of this node: binds this
	 * node's row unless it is bound, and waits for the session of the next bound node by
	 * id.
	 * @param nodeId this node
	 * @param incarnation this node's process ({@code HeartbeatRows.incarnation})
	 * @param ownSession the backend this node's row names, or {@code 0}
	 * @param sessions the backends of the live bound sessions of the other nodes that are
	 * alive by their heartbeat, by node
	 */
	synchronized void members(String nodeId, String incarnation, long ownSession, Map<String, Long> sessions) {
		if (!this.bindsNode || this.listener == null) {
			return;
		}
		this.nodeId = nodeId;
		this.incarnation = incarnation;
		if (this.nodeBound && ownSession != this.boundSession) {
			// The row was forgotten and registered again, unbound: bind it again.
			this.nodeBound = false;
		}
		if (!this.nodeBound) {
			this.nodeToBind = true;
		}
		TreeMap<String, Long> ring = new TreeMap<>(sessions);
		ring.remove(nodeId);
		Map.Entry<String, Long> next = ring.higherEntry(nodeId);
		if (next == null) {
			next = ring.firstEntry();
		}
		Waiter waiter = this.waiters.get(NODE_WAITER);
		if (next != null && waiter == null) {
			waiter = new Waiter(NODE_WAITER);
			this.waiters.put(NODE_WAITER, waiter);
			waiter.start();
		}
		if (waiter != null) {
			waiter
				.target((next != null) ? new Target(this.nodesKey, next.getValue().intValue(), next.getValue()) : null);
		}
	}

	@Override
	public void run(Connection connection) throws SQLException {
		Map<String, Long> unbind;
		Map<String, Long> bind;
		synchronized (this) {
			unbind = new LinkedHashMap<>(this.toUnbind);
			bind = new LinkedHashMap<>(this.toBind);
			this.toUnbind.clear();
			this.toBind.clear();
		}
		for (Map.Entry<String, Long> entry : unbind.entrySet()) {
			unlock(connection, entry.getKey(), entry.getValue());
			synchronized (this) {
				this.bound.remove(entry.getKey(), entry.getValue());
			}
		}
		for (Map.Entry<String, Long> entry : bind.entrySet()) {
			bind(connection, entry.getKey(), entry.getValue());
		}
		boolean bindNode;
		synchronized (this) {
			bindNode = this.nodeToBind && !this.nodeBound;
			this.nodeToBind = false;
			this.nodeBinding = bindNode;
		}
		if (bindNode) {
			bindNode(connection);
		}
	}

	private void bindNode(Connection connection) throws SQLException {
		prepareSession(connection);
		boolean bound = false;
		long session = 0;
		try (PreparedStatement statement = connection.prepareStatement(this.bindNodeSql)) {
			statement.setString(1, this.nodeId);
			statement.setString(2, this.incarnation);
			try (ResultSet rows = statement.executeQuery()) {
				bound = rows.next();
				session = bound ? rows.getLong(1) : 0;
			}
		}
		catch (SQLException ex) {
			if (!isConflict(ex)) {
				throw ex;
			}
			logger.debug("Leader node " + this.nodeId + " could not bind its session yet: " + ex);
		}
		synchronized (this) {
			this.nodeBinding = false;
			this.nodeBound = bound;
			this.boundSession = session;
		}
		if (bound) {
			logger.debug("Leader node " + this.nodeId + " bound to its session");
		}
		else {
			// The row is another process's, or not there yet: the node's death is seen by
			// its heartbeat only, until a later heartbeat binds it. A session-level lock
			// outlives a statement that failed.
			try (Statement statement = connection.createStatement()) {
				statement.execute(this.unlockNodeSql);
			}
		}
	}

	/**
	 * Returns whether a statement failed because of a concurrent transaction (a
	 * serialization failure or a deadlock, at an isolation level above READ COMMITTED
	 * that a notifications URL's connections may have): the session lives on, and the
	 * bind is tried again.
	 * @param ex the failure
	 * @return whether it is such a conflict
	 */
	private static boolean isConflict(SQLException ex) {
		return ex.getSQLState() != null && ex.getSQLState().startsWith("40");
	}

	private void bind(Connection connection, String group, long term) throws SQLException {
		Long before;
		synchronized (this) {
			before = this.bound.get(group);
		}
		if (before != null) {
			unlock(connection, group, before);
			synchronized (this) {
				this.bound.remove(group);
			}
		}
		prepareSession(connection);
		synchronized (this) {
			this.binding = Map.entry(group, term);
		}
		boolean bound = false;
		try (PreparedStatement statement = connection.prepareStatement(this.bindSql)) {
			statement.setInt(1, groupKey(group));
			statement.setInt(2, termKey(term));
			statement.setString(3, group);
			statement.setLong(4, term);
			statement.setString(5, this.nodeId);
			try (ResultSet rows = statement.executeQuery()) {
				bound = rows.next();
			}
		}
		catch (SQLException ex) {
			if (!isConflict(ex)) {
				throw ex;
			}
			// Bound with the next renewal, which learns that the term is held again.
			logger.debug("Leader group=" + group + " node=" + this.nodeId + " term=" + term
					+ " could not be bound yet: " + ex);
		}
		synchronized (this) {
			this.binding = null;
			if (bound) {
				this.bound.put(group, term);
			}
		}
		if (bound) {
			if (logger.isDebugEnabled()) {
				logger.debug("Leader group=" + group + " node=" + this.nodeId + " term=" + term
						+ " bound to the node's session");
			}
		}
		else {
			// The lease is no longer this node's under that term, or the lock was not
			// free: no crash takeover for this term.
			unlock(connection, group, term);
		}
	}

	/**
	 * Sets the session up before its first lock: PostgreSQL 14 and later end a session
	 * idle for {@code idle_session_timeout}, which would end what it binds.
	 * @param connection the session's connection
	 */
	private void prepareSession(Connection connection) throws SQLException {
		if (!this.sessionSet) {
			try (Statement statement = connection.createStatement();
					ResultSet rows = statement.executeQuery("SELECT set_config('idle_session_timeout', '0', false) "
							+ "WHERE current_setting('idle_session_timeout', true) IS NOT NULL")) {
				this.idleTimeoutOff = rows.next();
			}
			this.sessionSet = true;
		}
	}

	private void unlock(Connection connection, String group, long term) throws SQLException {
		unlock(connection, groupKey(group), termKey(term));
	}

	private static void unlock(Connection connection, int key, int subKey) throws SQLException {
		try (PreparedStatement statement = connection.prepareStatement("SELECT pg_advisory_unlock(?, ?)")) {
			statement.setInt(1, key);
			statement.setInt(2, subKey);
			statement.execute();
		}
	}

	@Override
	public void release(Connection connection) throws SQLException {
		try (Statement statement = connection.createStatement()) {
			statement.execute("SELECT pg_advisory_unlock_all()");
			if (this.idleTimeoutOff) {
				statement.execute("RESET idle_session_timeout");
			}
		}
		finally {
			// The next connection is set up again.
			this.idleTimeoutOff = false;
			this.sessionSet = false;
			synchronized (this) {
				this.bound.clear();
				this.nodeBound = false;
			}
		}
	}

	@Override
	public void ended() {
		Map<String, Long> lost;
		boolean nodeLost;
		synchronized (this) {
			lost = new TreeMap<>(this.bound);
			this.bound.clear();
			// A bind whose reply was lost may have committed: count it as bound too.
			if (this.binding != null) {
				lost.put(this.binding.getKey(), this.binding.getValue());
				this.binding = null;
			}
			nodeLost = this.nodeBound || this.nodeBinding;
			this.nodeBound = false;
			this.nodeBinding = false;
		}
		ReleaseListener listener = this.listener;
		if (!lost.isEmpty() || nodeLost) {
			logger.warn("Leader node " + this.nodeId + " lost the database session that bound "
					+ (nodeLost ? "the node and " : "") + lost.keySet() + ": other nodes may take "
					+ (nodeLost ? "its daemons and " : "") + "those groups over, so it stops running and leading them");
			if (listener != null && !lost.isEmpty()) {
				listener.sessionLost(lost);
			}
			if (listener != null && nodeLost) {
				listener.nodeSessionLost();
			}
		}
	}

	/**
	 * Stops every follower's wait and gives its connection back.
	 */
	void stopWaiters() {
		Collection<Waiter> stopped;
		synchronized (this) {
			stopped = List.copyOf(this.waiters.values());
			this.waiters.clear();
		}
		stopped.forEach(Waiter::shutdown);
		for (Waiter waiter : stopped) {
			waiter.join();
		}
	}

	/**
	 * A lock that another node's session holds: a lease's (group key, term key), or a
	 * node's (nodes key, the session's backend).
	 */
	private record Target(int key, int subKey, long sessionPid) {
	}

	/**
	 * Waits for another node's session, on the {@code leader-session-<group>} thread and
	 * a connection of its own: of the holder of one group, or, for {@link #NODE_WAITER},
	 * of the next bound node. When it ends, a group's waiter tells the listener that the
	 * lease is free, and the node's notifies the assignments channel.
	 */
	private final class Waiter {

		private final String group;

		private final Thread thread;

		// Guarded by this.
		private @Nullable Target target;

		private @Nullable Target waitedFor;

		private @Nullable PreparedStatement running;

		private boolean stopped;

		Waiter(String group) {
			this.group = group;
			this.thread = OwnThreads
				.daemon(NODE_WAITER.equals(group) ? "leader-session-node" : "leader-session-" + group, this::run);
		}

		void start() {
			this.thread.start();
		}

		synchronized void target(@Nullable Target target) {
			if (Objects.equals(this.target, target)) {
				return;
			}
			this.target = target;
			cancelRunning();
			notifyAll();
		}

		synchronized void shutdown() {
			this.stopped = true;
			cancelRunning();
			notifyAll();
		}

		void join() {
			try {
				this.thread.join(2000);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		}

		/**
		 * Cancels the wait under way, on a thread of its own: a cancel is a connection to
		 * the server of its own, and a grant calls for it on a hand-over's path, before
		 * its event.
		 */
		private void cancelRunning() {
			PreparedStatement running = this.running;
			if (running != null) {
				OwnThreads.daemon("leader-session-cancel", () -> {
					try {
						running.cancel();
					}
					catch (SQLException ex) {
						logger.debug("Could not cancel the wait for the session of " + this.group + ": " + ex);
					}
				}).start();
			}
		}

		/**
		 * Returns the next lease to wait for: one not waited for to its end yet.
		 * @return the lease, or {@code null} once stopped
		 */
		private synchronized @Nullable Target next() throws InterruptedException {
			while (!this.stopped && (this.target == null || this.target.equals(this.waitedFor))) {
				wait();
			}
			return this.stopped ? null : this.target;
		}

		private void run() {
			Connection connection = null;
			try {
				Target target;
				while ((target = next()) != null) {
					if (connection == null) {
						connection = PostgresSessions.this.connections.borrow();
					}
					if (awaitEnd(connection, target)) {
						ended(connection);
					}
				}
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
			catch (SQLException | RuntimeException ex) {
				logger.warn("Leader node " + PostgresSessions.this.nodeId + " stopped waiting for the session of "
						+ (NODE_WAITER.equals(this.group) ? "another node; its daemons move when its heartbeat expires"
								: "the leader of " + this.group + "; it takes over when the lease expires")
						+ ": " + ex);
				synchronized (PostgresSessions.this) {
					PostgresSessions.this.waiters.remove(this.group, this);
				}
			}
			finally {
				if (connection != null) {
					PostgresSessions.this.connections.giveBack(connection);
				}
			}
		}

		private void ended(Connection connection) throws SQLException {
			if (!NODE_WAITER.equals(this.group)) {
				ReleaseListener listener = PostgresSessions.this.listener;
				if (listener != null) {
					listener.released(this.group, null);
				}
				return;
			}
			// Every node follows the channel; the daemons leader reads the nodes.
			try (PreparedStatement notify = connection.prepareStatement("SELECT pg_notify(?, '')")) {
				notify.setString(1, PostgresSessions.this.assignmentsChannel);
				notify.execute();
			}
		}

		/**
		 * Waits for the target's lock to be free, in a transaction of its own.
		 * @param connection the waiter's connection
		 * @param target the lock to wait for
		 * @return whether it was
		 */
		private boolean awaitEnd(Connection connection, Target target) throws SQLException {
			synchronized (this) {
				if (this.stopped || !target.equals(this.target)) {
					return false;
				}
			}
			connection.setAutoCommit(false);
			try {
				try (Statement prepare = connection.createStatement()) {
					prepare.execute(PREPARE_WAIT);
				}
				return awaitInTransaction(connection, target);
			}
			finally {
				try {
					connection.setAutoCommit(true);
				}
				catch (SQLException ex) {
					logger.debug("Could not end the wait's transaction: " + ex);
				}
			}
		}

		private boolean awaitInTransaction(Connection connection, Target target) throws SQLException {
			PreparedStatement statement = connection.prepareStatement(WAIT);
			try {
				statement.setInt(1, target.key());
				statement.setInt(2, target.subKey());
				statement.setInt(3, target.key());
				statement.setInt(4, target.subKey());
				statement.setQueryTimeout(WAIT_SECONDS);
				synchronized (this) {
					if (this.stopped || !target.equals(this.target)) {
						return false;
					}
					this.running = statement;
				}
				try {
					statement.execute();
				}
				catch (SQLException ex) {
					if (!"57014".equals(ex.getSQLState())) {
						throw ex;
					}
					// Cancelled (a new target, a stop, or the wait's bound), perhaps
					// between the lock and its unlock: a session-level lock outlives the
					// statement and its transaction.
					connection.rollback();
					try (Statement unlock = connection.createStatement()) {
						unlock.execute("SELECT pg_advisory_unlock_all()");
					}
					return false;
				}
				connection.commit();
				// Ended, even if the target changed meanwhile: a wake-up is only a hint,
				// and a missed one would wait for the next heartbeat.
				synchronized (this) {
					this.running = null;
					this.waitedFor = target;
					return true;
				}
			}
			finally {
				synchronized (this) {
					this.running = null;
				}
				statement.close();
			}
		}

	}

}
