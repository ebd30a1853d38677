package dev.leader.jdbc;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.HashSet;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

import javax.sql.DataSource;

import dev.leader.NodeInfo;
import dev.leader.daemon.DaemonSnapshot;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.LeaseState;
import dev.leader.node.NodeRegistration;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.postgresql.PGConnection;
import org.jspecify.annotations.Nullable;
import org.postgresql.PGNotification;

import org.springframework.dao.DuplicateKeyException;

/**
 * {@link CoordinationStore} on PostgreSQL. Every transition is one statement, and every time comparison uses
 * {@code clock_timestamp()}, the database's clock at the moment of the comparison ({@code now()} would be the start of
 * the transaction). Released leases are announced with {@code NOTIFY} on the channel {@code <prefix>released}, which
 * {@link #listen} follows on a dedicated connection that reconnects by itself.
 * <p>
 * That connection is the node's only listening connection: other stores of this package follow their channels on it
 * too (see {@link PostgresDaemonStore#listen}). It is opened when the first channel is followed, {@code LISTEN}s to
 * every followed channel (a channel followed later is added within half a second), and is given back to the pool,
 * after {@code UNLISTEN *}, when none is followed any more; {@link #disconnect()} waits for that.
 * <p>
 * While a {@link PostgresDaemonStore} follows the heartbeat ({@link PostgresDaemonStore#followHeartbeat}), the
 * heartbeat statement also reads the assignments, so that daemons add no statement to a node's steady state.
 * <p>
 * <b>Connection of the round trips.</b> The store keeps the connection of its last round trip for the next one
 * instead of letting it sit idle in the pool, because a pool checks a connection that has been idle for a while
 * before lending it (HikariCP: idle for more than 500 ms), and that check is a round trip, and on PostgreSQL a
 * transaction, of its own: it would double the steady-state load and add a round trip to every hand-over. Each
 * round trip hands the kept connection back to the pool and borrows one at once, which gives the same connection back
 * unchecked while the pool's rules still apply (a connection past its maximum lifetime is retired, leak detection
 * counts from the borrow). So one connection of the pool stays in use between round trips: with the listening
 * connection, a node keeps two. A connection that failed is not kept, so the round trip after a failure borrows a
 * fresh, checked one; the round trip that first finds a kept connection closed by the server fails, like any
 * failed round trip, and the engine retries it. Because no check precedes a kept connection's statement, a
 * connection that hangs (a server that vanished without closing it) is bounded by a network timeout of twice the
 * query timeout. The store is safe for concurrent callers: one connection is kept at most, and it is used by one
 * caller at a time; callers that overlap borrow their own. {@link #disconnect()} gives it back.
 */
public final class PostgresCoordinationStore implements CoordinationStore {

	private static final Log logger = LogFactory.getLog(PostgresCoordinationStore.class);

	private static final String PROCESS = Long.toHexString(new java.security.SecureRandom().nextLong());

	private static final String UNHEARD = "a follower takes over a released lease on its next round trip, within "
			+ "leader.lease.renew-interval, and daemon changes reach their nodes the same way.";

	private static final String REMAINING = "(extract(epoch from (%s - clock_timestamp())) * 1000)::bigint";

	// Grants and renewals must survive a crash of the database, whatever its default: a lost term increment could
	// give two holders one term. A synchronous_commit of off or local is raised to on for the statement's own
	// transaction; a stronger one (remote_write, remote_apply) is kept.
	private static final String DURABLE = """
			set_config('synchronous_commit', CASE WHEN current_setting('synchronous_commit') IN ('off', 'local')
			  THEN 'on' ELSE current_setting('synchronous_commit') END, true)""";

	private final OwnConnections connections;

	private final Statements statements;

	private final String channel;

	private final String acquireSql;

	private final String tickSql;

	private final String tickWithDaemonsSql;

	private final String releaseSql;

	private final String deregisterSql;

	private final String leasesSql;

	private final int networkTimeoutMillis;

	// The connection of the last round trip, for the next one; owned by whoever took it out.
	private final AtomicReference<@Nullable Connection> kept = new AtomicReference<>();

	private final AtomicReference<@Nullable Consumer<DaemonSnapshot>> daemonsFollower = new AtomicReference<>();

	private final Map<String, List<Consumer<String>>> subscribers = new ConcurrentHashMap<>();

	private @Nullable Listener listener;

	// Listeners told to stop, which may still hold their connection; guarded by subscribers.
	private final List<Listener> stopping = new ArrayList<>();

	// The channels the listening connection follows now; guarded by itself.
	private final Set<String> listening = new HashSet<>();

	private final Notifications notifications;

	// Set once this node follows no notifications: turned off, or found behind a pooler in transaction mode.
	private volatile boolean unheard;

	private final AtomicBoolean announced = new AtomicBoolean();

	/**
	 * Creates a store.
	 * @param dataSource the PostgreSQL data source
	 * @param tablePrefix the prefix of the starter's tables
	 * @param queryTimeout the longest a statement may run; rounded up to whole seconds
	 */
	public PostgresCoordinationStore(DataSource dataSource, TablePrefix tablePrefix, Duration queryTimeout) {
		this(dataSource, tablePrefix, queryTimeout, Notifications.pooled());
	}

	/**
	 * Creates a store.
	 * @param dataSource the PostgreSQL data source
	 * @param tablePrefix the prefix of the starter's tables
	 * @param queryTimeout the longest a statement may run; rounded up to whole seconds
	 * @param notifications where to follow notifications
	 */
	public PostgresCoordinationStore(DataSource dataSource, TablePrefix tablePrefix, Duration queryTimeout,
			Notifications notifications) {
		this.notifications = notifications;
		this.unheard = !notifications.enabled();
		this.connections = new OwnConnections(dataSource);
		this.statements = new Statements(queryTimeout);
		this.networkTimeoutMillis = 2 * this.statements.timeoutSeconds() * 1000;
		String p = tablePrefix.value();
		this.channel = p + "released";
		String remaining = REMAINING.formatted("expires_at");
		// Every grant is a new term, and locks the row FOR UPDATE first, which waits for every transaction that a
		// guard of the old term locked FOR KEY SHARE (G3). That holds for a node that asks for a lease it already
		// holds, too: the engine never does while it holds the lease, so such a request comes from a node that
		// stepped down, or from another process that was started with the same node id, and the two must never
		// share a term. The insert's source joins that lock, so it is taken before the upsert, and only when the
		// lease is free, expired or this node's by the snapshot: an attempt on a lease that another node holds
		// inserts nothing and locks nothing. The update is allowed only where the lock was taken, so a row that
		// appeared after the snapshot is never taken over unlocked: that attempt is refused, and retried.
		// A grant's term is at least the first of the server's epoch (Statements.EPOCH_BASE), so that terms keep
		// rising across a promotion even when the old primary's last grants were lost with it.
		this.acquireSql = """
				WITH takeover AS (
				  SELECT group_name FROM %1$sleases
				  WHERE group_name = ? AND (holder IS NULL OR expires_at <= clock_timestamp() OR holder = ?)
				  FOR UPDATE
				), attempt AS (
				  INSERT INTO %1$sleases AS l (group_name, holder, term, acquired_at, renewed_at, expires_at)
				  SELECT ?, ?, epoch.base + 1, clock_timestamp(), clock_timestamp(),
				    clock_timestamp() + ? * interval '1 millisecond'
				  FROM (SELECT %3$s) AS durable CROSS JOIN (SELECT %4$s AS base) AS epoch LEFT JOIN takeover ON true
				  WHERE takeover.group_name IS NOT NULL
				     OR NOT EXISTS (SELECT 1 FROM %1$sleases WHERE group_name = ?)
				  ON CONFLICT (group_name) DO UPDATE SET term = greatest(l.term + 1, excluded.term),
				    holder = excluded.holder,
				    acquired_at = clock_timestamp(), renewed_at = clock_timestamp(), expires_at = excluded.expires_at
				  WHERE EXISTS (SELECT 1 FROM takeover)
				  RETURNING l.group_name, l.holder, l.term, l.expires_at
				)
				SELECT true, group_name, holder, term, expires_at, %2$s FROM attempt
				UNION ALL
				SELECT false, group_name, holder, term, expires_at, %2$s FROM %1$sleases
				WHERE group_name = ? AND NOT EXISTS (SELECT 1 FROM attempt)
				""".formatted(p, remaining, DURABLE, Statements.EPOCH_BASE);
		// Kinds of rows: R = renewed lease, L = lease as it stood, N = member, D = the live registration of another
		// process under this node's id. Lease rows carry group, holder, term, expiry and time left in columns 2 to 6;
		// member rows carry id, name, pid, start, heartbeat age, host, heartbeat, daemons and drained. The node's own
		// row comes from the upsert, because the other parts of the statement see the table as it was before the
		// statement. DaemonRows reads the same layout.
		// The node's row belongs to one incarnation, a process: another process with the same id takes it over only
		// once it has gone silent for the node expiry. Until then the upsert changes nothing, nothing is renewed, and
		// the other registration comes back as D.
		// A lease granted before the server's last promotion is not renewed: its holder steps down and acquires it
		// again, under a term of the new epoch, so that no node goes on leading under a term that is lower than one
		// that may have been granted, and seen by other systems, on the old primary.
		this.tickSql = """
				WITH me AS (
				  INSERT INTO %1$snodes AS n (node_id, name, host, pid, incarnation, started_at, heartbeat_at, daemons)
				  SELECT ?, ?, ?, ?, ?, clock_timestamp(), clock_timestamp(), ?::varchar[] FROM (SELECT %3$s) AS durable
				  ON CONFLICT (node_id) DO UPDATE SET heartbeat_at = clock_timestamp(), name = excluded.name,
				    host = excluded.host, pid = excluded.pid, daemons = excluded.daemons,
				    incarnation = excluded.incarnation,
				    started_at = CASE WHEN n.incarnation = excluded.incarnation THEN n.started_at
				                      ELSE clock_timestamp() END,
				    drained = (n.drained AND n.incarnation = excluded.incarnation)
				  WHERE n.incarnation = excluded.incarnation
				     OR n.heartbeat_at <= clock_timestamp() - ? * interval '1 millisecond'
				  RETURNING node_id, name, host, pid, started_at, heartbeat_at, daemons, drained
				), forgotten AS (
				  DELETE FROM %1$snodes
				  WHERE node_id <> ? AND heartbeat_at < clock_timestamp() - 2 * ? * interval '1 millisecond'
				), renewed AS (
				  UPDATE %1$sleases l SET renewed_at = clock_timestamp(),
				         expires_at = clock_timestamp() + ? * interval '1 millisecond'
				  FROM unnest(?::varchar[], ?::bigint[]) AS h(group_name, term)
				  WHERE l.group_name = h.group_name AND l.term = h.term AND l.holder = ?
				    AND l.expires_at > clock_timestamp() AND EXISTS (SELECT 1 FROM me)
				    AND l.term > (SELECT %4$s)
				  RETURNING l.group_name, l.holder, l.term, l.expires_at
				)
				SELECT 'R', group_name, holder, term, expires_at, %2$s, NULL, NULL::timestamptz, NULL::varchar[],
				       NULL::boolean
				FROM renewed
				UNION ALL
				SELECT 'L', group_name, holder, term, expires_at, %2$s, NULL, NULL, NULL, NULL FROM %1$sleases
				WHERE group_name = ANY (?::varchar[])
				UNION ALL
				SELECT 'N', node_id, name, pid, started_at, 0, host, heartbeat_at, daemons, drained FROM me
				UNION ALL
				SELECT CASE WHEN node_id = ? THEN 'D' ELSE 'N' END, node_id, name, pid, started_at,
				       (extract(epoch from (clock_timestamp() - heartbeat_at)) * 1000)::bigint, host, heartbeat_at,
				       daemons, drained
				FROM %1$snodes WHERE node_id <> ? OR NOT EXISTS (SELECT 1 FROM me)
				""".formatted(p, remaining, DURABLE, Statements.EPOCH_BASE);
		this.tickWithDaemonsSql = this.tickSql + "UNION ALL\n" + DaemonRows.assignmentsRequestsAndClock(p);
		// A release is a change of holder: it locks the rows FOR UPDATE, in a fixed order, before it changes them, so
		// that it waits for the guarded transactions of the terms it ends.
		// A release commits without waiting for its WAL to be flushed (synchronous_commit off for its own
		// transaction only). A release lost in a crash of the database leaves the lease to its holder until it
		// expires, as a crashed holder does: nothing is granted on it, and the term is not changed. Whoever acts on
		// a release acquires in a durable commit, which flushes the WAL up to it, release included. Acquire and
		// renewal stay durable, since a lost term increment could give two holders one term.
		// The notification names the node that should acquire first: the one that has run longest, other than the
		// releasing one, which is likely the warmest. Deregistered nodes are gone; a crashed one is named until it
		// is forgotten, and then the others acquire a few milliseconds later.
		this.releaseSql = """
				WITH locked AS (
				  SELECT l.group_name FROM %1$sleases l
				  JOIN unnest(?::varchar[], ?::bigint[]) AS h(group_name, term)
				    ON l.group_name = h.group_name AND l.term = h.term
				  WHERE l.holder = ?
				  ORDER BY l.group_name
				  FOR UPDATE OF l
				), released AS (
				  UPDATE %1$sleases l SET holder = NULL, expires_at = clock_timestamp()
				  FROM locked WHERE l.group_name = locked.group_name
				  RETURNING l.group_name
				), successor AS (
				  SELECT node_id FROM %1$snodes WHERE node_id <> ? ORDER BY started_at, node_id LIMIT 1
				)
				SELECT group_name, pg_notify(?, concat_ws(' ', group_name, (SELECT node_id FROM successor))),
				       set_config('synchronous_commit', 'off', true)
				FROM released
				""".formatted(p);
		this.deregisterSql = "DELETE FROM %snodes WHERE node_id = ?".formatted(p);
		this.leasesSql = "SELECT group_name, holder, term, expires_at, %s FROM %sleases ORDER BY group_name"
			.formatted(remaining, p);
		// A JVM links a lambda the first time it creates it. A node acquires and releases seldom, each time on a
		// hand-over's path, so their statements' lambdas are linked now.
		acquireCall("", "", Duration.ZERO);
		releaseCall("", Map.of(), this.channel);
	}

	@Override
	public AcquireResult acquire(String group, String nodeId, Duration duration) {
		return execute("acquire", this.acquireSql, acquireCall(group, nodeId, duration));
	}

	private static Statements.Callback<AcquireResult> acquireCall(String group, String nodeId, Duration duration) {
		return (statement) -> {
			statement.setString(1, group);
			statement.setString(2, nodeId);
			statement.setString(3, group);
			statement.setString(4, nodeId);
			statement.setLong(5, duration.toMillis());
			statement.setString(6, group);
			statement.setString(7, group);
			try (ResultSet rows = statement.executeQuery()) {
				Statements.requireDurable(statement);
				if (!rows.next()) {
					return new AcquireResult(false, null);
				}
				return new AcquireResult(rows.getBoolean(1), lease(rows, 2));
			}
		};
	}

	@Override
	public Tick tick(NodeRegistration node, Map<String, Long> held, Collection<String> groups, Duration leaseDuration,
			Duration nodeExpiry) {
		Consumer<DaemonSnapshot> follower = this.daemonsFollower.get();
		DaemonRows daemons = (follower != null) ? new DaemonRows(nodeExpiry) : null;
		Tick result = execute("heartbeat", (daemons != null) ? this.tickWithDaemonsSql : this.tickSql, (statement) -> {
			Connection connection = statement.getConnection();
			int i = 0;
			statement.setString(++i, node.id());
			statement.setString(++i, node.name());
			statement.setString(++i, node.host());
			statement.setLong(++i, node.pid());
			statement.setString(++i, incarnation(node));
			statement.setArray(++i, connection.createArrayOf("varchar", new TreeSet<>(node.daemons()).toArray()));
			statement.setLong(++i, nodeExpiry.toMillis());
			statement.setString(++i, node.id());
			statement.setLong(++i, nodeExpiry.toMillis());
			statement.setLong(++i, leaseDuration.toMillis());
			statement.setArray(++i, connection.createArrayOf("varchar", held.keySet().toArray()));
			statement.setArray(++i, connection.createArrayOf("bigint", held.values().toArray()));
			statement.setString(++i, node.id());
			statement.setArray(++i, connection.createArrayOf("varchar", groups.toArray()));
			statement.setString(++i, node.id());
			statement.setString(++i, node.id());
			Map<String, LeaseState> renewed = new LinkedHashMap<>();
			Map<String, LeaseState> leases = new LinkedHashMap<>();
			List<NodeInfo> members = new ArrayList<>();
			try (ResultSet rows = statement.executeQuery()) {
				Statements.requireDurable(statement);
				while (rows.next()) {
					switch (rows.getString(1)) {
						case "R" -> renewed.put(rows.getString(2), lease(rows, 2));
						case "L" -> leases.put(rows.getString(2), lease(rows, 2));
						case "N" -> members.add(member(rows, nodeExpiry));
						case "D" -> throw new DuplicateKeyException(String.format("Node id '%s' is registered by "
								+ "another live process (host %s, pid %d, last heartbeat %d ms ago). Two processes "
								+ "must never share a node id: give each its own leader.node.id, or leave it unset "
								+ "to have one generated. This process takes part in nothing until that "
								+ "registration has been silent for the node expiry", node.id(), rows.getString(7),
								rows.getLong(4), rows.getLong(6)));
						default -> {
						}
					}
					if (daemons != null) {
						daemons.add(rows);
					}
				}
			}
			return new Tick(renewed, leases, members);
		});
		if (follower != null && daemons != null) {
			try {
				follower.accept(daemons.snapshot());
			}
			catch (RuntimeException ex) {
				logger.warn("Daemon snapshot follower failed; the heartbeat goes on: " + ex);
			}
		}
		return result;
	}

	/**
	 * Makes every heartbeat statement from now on also read the nodes' daemons, the assignments and the requests,
	 * and hands each snapshot so read to the follower, so that a node polls its assignments without a statement of
	 * its own.
	 * @param follower called with each snapshot, on the thread that sent the heartbeat, after the heartbeat's rows
	 * were read; it must return quickly
	 * @return a handle that stops the reading and the delivery
	 */
	AutoCloseable readDaemonsWithHeartbeat(Consumer<DaemonSnapshot> follower) {
		this.daemonsFollower.set(follower);
		return () -> this.daemonsFollower.compareAndSet(follower, null);
	}

	@Override
	public Collection<String> release(String nodeId, Map<String, Long> held) {
		return execute("release", this.releaseSql, releaseCall(nodeId, held, this.channel));
	}

	private static Statements.Callback<Collection<String>> releaseCall(String nodeId, Map<String, Long> held,
			String channel) {
		return (statement) -> {
			Connection connection = statement.getConnection();
			statement.setArray(1, connection.createArrayOf("varchar", held.keySet().toArray()));
			statement.setArray(2, connection.createArrayOf("bigint", held.values().toArray()));
			statement.setString(3, nodeId);
			statement.setString(4, nodeId);
			statement.setString(5, channel);
			List<String> released = new ArrayList<>();
			try (ResultSet rows = statement.executeQuery()) {
				while (rows.next()) {
					released.add(rows.getString(1));
				}
			}
			return released;
		};
	}

	@Override
	public void deregister(String nodeId) {
		execute("deregister", this.deregisterSql, (statement) -> {
			statement.setString(1, nodeId);
			return statement.executeUpdate();
		});
	}

	@Override
	public List<LeaseState> leases() {
		return execute("read leases", this.leasesSql, (statement) -> {
			List<LeaseState> leases = new ArrayList<>();
			try (ResultSet rows = statement.executeQuery()) {
				while (rows.next()) {
					leases.add(lease(rows, 1));
				}
			}
			return leases;
		});
	}

	/**
	 * Gives the kept connection back to the pool, and waits up to 2 s for a listening connection that no channel is
	 * followed on any more to be given back too (it notices within half a second); the next round trip borrows one
	 * again. Called by the engine when it stops, and by the application context when it closes.
	 */
	@Override
	public void disconnect() {
		Connection connection = this.kept.getAndSet(null);
		if (connection != null) {
			this.connections.giveBack(connection);
		}
		List<Listener> stopped;
		synchronized (this.subscribers) {
			stopped = List.copyOf(this.stopping);
			this.stopping.clear();
		}
		for (Listener listener : stopped) {
			try {
				listener.join(2000);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				return;
			}
		}
	}

	/**
	 * Checks that the data source leads to a writable primary, as the store's statements need.
	 * @throws IllegalStateException if its connections are read-only, or lead to a standby or a read-only database
	 * @throws org.springframework.dao.DataAccessException if the database cannot be reached
	 */
	public void requireWritablePrimary() {
		try {
			this.connections.requireWritablePrimary();
		}
		catch (SQLException ex) {
			throw Statements.translate("check the database", ex);
		}
	}

	@Override
	public AutoCloseable listen(ReleaseListener listener) {
		// The payload is the group name, then a space and the successor if there is one; neither name has spaces.
		return subscribe(this.channel, (payload) -> {
			int space = payload.indexOf(' ');
			if (space < 0) {
				listener.released(payload, null);
			}
			else {
				listener.released(payload.substring(0, space), payload.substring(space + 1));
			}
		});
	}

	/**
	 * Follows a channel on this node's listening connection.
	 * @param channel the channel, a prefixed name of this package's stores, never user input
	 * @param subscriber called with each notification's payload, on the {@code leader-listen} thread; it must
	 * return quickly
	 * @return a handle that stops following the channel for this subscriber
	 */
	AutoCloseable subscribe(String channel, Consumer<String> subscriber) {
		if (!this.notifications.enabled() && this.announced.compareAndSet(false, true)) {
			logger.info("Notifications are off (leader.jdbc.notifications.enabled=false): " + UNHEARD);
		}
		synchronized (this.subscribers) {
			this.subscribers.computeIfAbsent(channel, (key) -> new CopyOnWriteArrayList<>()).add(subscriber);
			if (this.listener == null && !this.unheard) {
				this.listener = new Listener();
				this.listener.start();
			}
		}
		awaitListening(channel, Duration.ofSeconds(2));
		return () -> {
			synchronized (this.subscribers) {
				List<Consumer<String>> followers = this.subscribers.get(channel);
				if (followers != null && followers.remove(subscriber) && followers.isEmpty()) {
					this.subscribers.remove(channel);
				}
				if (this.subscribers.isEmpty() && this.listener != null) {
					// Not joined here: the engine unfollows before it releases, and a hand-over must not wait.
					this.listener.shutdown();
					this.stopping.add(this.listener);
					this.listener = null;
				}
			}
		};
	}

	/**
	 * Waits, for a bounded time, until the listening connection follows the channel, so that a caller that reads the
	 * state after subscribing misses no change: whatever was committed before is in its read, whatever comes after
	 * is notified. Returns regardless once the time is up (the database may be unreachable); polling covers it.
	 */
	private void awaitListening(String channel, Duration timeout) {
		long deadline = System.nanoTime() + timeout.toNanos();
		synchronized (this.listening) {
			while (!this.listening.contains(channel) && !this.unheard) {
				long left = deadline - System.nanoTime();
				if (left <= 0) {
					return;
				}
				try {
					TimeUnit.NANOSECONDS.timedWait(this.listening, left);
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
					return;
				}
			}
		}
	}

	/**
	 * Leaves notifications for good, and lets every subscriber that waits for them go on without.
	 */
	private void leaveUnheard() {
		synchronized (this.listening) {
			this.unheard = true;
			this.listening.notifyAll();
		}
	}

	private void confirmListening(Set<String> channels) {
		synchronized (this.listening) {
			this.listening.clear();
			this.listening.addAll(channels);
			this.listening.notifyAll();
		}
	}

	private <T> T execute(String task, String sql, Statements.Callback<T> callback) {
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
	 * Hands the kept connection back and borrows one at once, so that the pool lends it back without checking it,
	 * and retires it instead if its lifetime is over.
	 */
	private Connection borrow() throws SQLException {
		Connection kept = this.kept.getAndSet(null);
		if (kept != null) {
			this.connections.giveBack(kept);
		}
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

	private static NodeInfo member(ResultSet rows, Duration nodeExpiry) throws SQLException {
		return new NodeInfo(rows.getString(2), rows.getString(3), rows.getString(7), rows.getLong(4),
				Statements.instant(rows, 5), Statements.instant(rows, 8), rows.getLong(6) < nodeExpiry.toMillis());
	}

	/**
	 * Returns the incarnation of a node: its process, told apart from an earlier or another process with the same id
	 * by the pid, the host and a value drawn once per JVM.
	 */
	private static String incarnation(NodeRegistration node) {
		return node.pid() + "/" + Integer.toHexString(node.host().hashCode()) + "/" + PROCESS;
	}

	private static LeaseState lease(ResultSet rows, int first) throws SQLException {
		return new LeaseState(rows.getString(first), rows.getString(first + 1), rows.getLong(first + 2),
				Statements.instant(rows, first + 3), Duration.ofMillis(rows.getLong(first + 4)));
	}

	/**
	 * Follows the subscribed channels on a connection of its own, reconnecting after failures.
	 */
	private final class Listener extends Thread {

		private final CountDownLatch stopped = new CountDownLatch(1);

		Listener() {
			super("leader-listen");
			setDaemon(true);
		}

		@Override
		public void run() {
			if (!announce()) {
				leaveUnheard();
				return;
			}
			while (!isStopped()) {
				Set<String> listening = new HashSet<>();
				Connection connection = null;
				try {
					connection = open();
					Statement statement = connection.createStatement();
					PGConnection notifications = connection.unwrap(PGConnection.class);
					PromptNotifications prompt = PromptNotifications.enable(connection);
					try {
						while (!isStopped()) {
							follow(statement, listening);
							PGNotification[] received = notifications.getNotifications(500);
							if (received != null) {
								for (PGNotification notification : received) {
									deliver(notification);
								}
							}
						}
						// The connection goes back to the application's pool: it must not go on listening there.
						confirmListening(Set.of());
						statement.execute("UNLISTEN *");
					}
					finally {
						if (prompt != null) {
							prompt.restore();
						}
					}
				}
				catch (SQLException | RuntimeException ex) {
					confirmListening(Set.of());
					if (!isStopped()) {
						logger.debug("Notifications interrupted, reconnecting in 1 s: " + ex);
						awaitStop(Duration.ofSeconds(1));
					}
				}
				finally {
					if (connection != null) {
						close(connection);
					}
				}
			}
		}

		/**
		 * Says once, at the first listening connection, where this node follows notifications, and checks that a
		 * pooled connection can follow them at all.
		 * @return whether to listen
		 */
		private boolean announce() {
			if (PostgresCoordinationStore.this.announced.get()) {
				return true;
			}
			DataSource direct = PostgresCoordinationStore.this.notifications.direct();
			if (direct != null) {
				PostgresCoordinationStore.this.announced.set(true);
				logger.info("Notifications follow a connection of their own (leader.jdbc.notifications.url)");
				return true;
			}
			try {
				boolean shared = PostgresCoordinationStore.this.connections.sharesSessions();
				PostgresCoordinationStore.this.announced.set(true);
				if (shared) {
					logger.warn("The DataSource reaches PostgreSQL through a pooler in transaction mode: consecutive "
							+ "transactions of one connection ran in different server sessions. LISTEN does not "
							+ "follow a client there, so this node follows no notifications: " + UNHEARD
							+ " Set leader.jdbc.notifications.url to a direct connection to the server, or to a pool "
							+ "in session mode, for hand-overs within milliseconds.");
					if (PostgresCoordinationStore.this.connections.preparesOnServer()) {
						logger.warn("The DataSource's connections prepare statements on the server after a few "
								+ "executions, which fails behind a pooler in transaction mode unless it keeps them "
								+ "itself (PgBouncer 1.21 and later, with max_prepared_statements): add "
								+ "prepareThreshold=0 to spring.datasource.url");
					}
					return false;
				}
				logger.info("Notifications follow a LISTEN connection of the application's DataSource");
			}
			catch (SQLException | RuntimeException ex) {
				logger.debug("Could not check how the DataSource reaches PostgreSQL; listening on it: " + ex);
			}
			return true;
		}

		private Connection open() throws SQLException {
			DataSource direct = PostgresCoordinationStore.this.notifications.direct();
			if (direct == null) {
				return PostgresCoordinationStore.this.connections.borrow();
			}
			Connection connection = direct.getConnection();
			try {
				connection.setAutoCommit(true);
				return connection;
			}
			catch (SQLException | RuntimeException ex) {
				OwnConnections.closeQuietly(connection);
				throw ex;
			}
		}

		private void close(Connection connection) {
			if (PostgresCoordinationStore.this.notifications.direct() == null) {
				PostgresCoordinationStore.this.connections.giveBack(connection);
			}
			else {
				OwnConnections.closeQuietly(connection);
			}
		}

		// Channel names are built from the validated table prefix and fixed suffixes, so they are safe to inline.
		private void follow(Statement statement, Set<String> listening) throws SQLException {
			Set<String> wanted = Set.copyOf(PostgresCoordinationStore.this.subscribers.keySet());
			for (String channel : wanted) {
				if (listening.add(channel)) {
					statement.execute("LISTEN " + channel);
				}
			}
			for (String channel : List.copyOf(listening)) {
				if (!wanted.contains(channel)) {
					statement.execute("UNLISTEN " + channel);
					listening.remove(channel);
				}
			}
			confirmListening(listening);
		}

		private void deliver(PGNotification notification) {
			for (Consumer<String> subscriber : PostgresCoordinationStore.this.subscribers
				.getOrDefault(notification.getName(), List.of())) {
				try {
					subscriber.accept(notification.getParameter());
				}
				catch (RuntimeException ex) {
					logger.warn("Notification subscriber failed on channel " + notification.getName()
							+ "; notifications go on: " + ex);
				}
			}
		}

		private boolean isStopped() {
			return this.stopped.getCount() == 0;
		}

		private void awaitStop(Duration timeout) {
			try {
				this.stopped.await(timeout.toMillis(), TimeUnit.MILLISECONDS);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				this.stopped.countDown();
			}
		}

		void shutdown() {
			this.stopped.countDown();
		}

	}

}
