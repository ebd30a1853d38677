package dev.leader.postgres;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

import javax.sql.DataSource;

import dev.leader.NodeInfo;
import dev.leader.daemon.DaemonSnapshot;
import dev.leader.jdbc.HeartbeatReads;
import dev.leader.jdbc.HeartbeatRows;
import dev.leader.jdbc.LogHeadsFollower;
import dev.leader.jdbc.LogHeadsFollowers;
import dev.leader.jdbc.OwnConnections;
import dev.leader.jdbc.PoolRoom;
import dev.leader.jdbc.RowReader;
import dev.leader.jdbc.Statements;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.LeaseState;
import dev.leader.node.NodeRegistration;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * {@link CoordinationStore} on PostgreSQL. Every transition is one statement, and every
 * time comparison uses {@code clock_timestamp()}, the database's clock at the moment of
 * the comparison ({@code now()} would be the start of the transaction). Released leases
 * are announced with {@code NOTIFY} on the channel {@code <prefix>released}, which
 * {@link #listen} follows on the node's listening connection ({@link NotificationHub}),
 * which reconnects by itself.
 * <p>
 * That connection is the node's only listening connection: other stores of this package
 * follow their channels on it too (see {@link PostgresDaemonStore#listen}). It is opened
 * when the first channel is followed, and given back to the pool when none is followed
 * any more; {@link #disconnect()} waits for that.
 * <p>
 * While a {@link PostgresDaemonStore} follows the heartbeat
 * ({@link PostgresDaemonStore#followHeartbeat}), the heartbeat statement also reads the
 * assignments, so that daemons add no statement to a node's steady state.
 * <p>
 * <b>Connection of the round trips.</b> The store keeps the connection of its last round
 * trip for the next one ({@link KeptConnection}) instead of letting it sit idle in the
 * pool, where the pool would check it before lending it, a round trip of its own on every
 * heartbeat and hand-over. So one connection of the pool stays in use between round
 * trips: with the listening connection, a node keeps two. The round trip that first finds
 * a kept connection closed by the server fails, and the engine retries it on a fresh one;
 * a kept connection that hangs is bounded by a network timeout of twice the query
 * timeout. The store is safe for concurrent callers. {@link #disconnect()} gives the kept
 * connection back.
 * <p>
 * The statements and why each is written the way it is are in {@link CoordinationSql}.
 * <p>
 * Built by {@link PostgresStoreFamily} unless the application defines its own store.
 * Public so that a node can also be built without a Spring context, as the test kit, the
 * benchmarks and the multi-process tests do.
 */
public final class PostgresCoordinationStore implements CoordinationStore, HeartbeatReads {

	private static final Log logger = LogFactory.getLog(PostgresCoordinationStore.class);

	private final OwnConnections connections;

	private final KeptConnection kept;

	private final boolean listensOnThePool;

	private final DataSource dataSource;

	private final NotificationHub notifications;

	private final String channel;

	private final CoordinationSql sql;

	private final AtomicReference<@Nullable Consumer<DaemonSnapshot>> daemonsFollower = new AtomicReference<>();

	private final LogHeadsFollowers logFollowers = new LogHeadsFollowers();

	private final TablePrefix prefix;

	private final String renderedPrefix;

	private volatile @Nullable PostgresSessions sessions;

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
		this.dataSource = dataSource;
		this.connections = new OwnConnections(dataSource);
		this.kept = new KeptConnection(this.connections, new Statements(queryTimeout));
		this.notifications = new NotificationHub(this.connections, notifications);
		this.listensOnThePool = notifications.direct() == null;
		this.channel = tablePrefix.channel("released");
		this.sql = new CoordinationSql(tablePrefix);
		this.prefix = tablePrefix;
		this.renderedPrefix = tablePrefix.render("${prefix}");
		// A JVM links a lambda the first time it creates it. A node acquires and releases
		// seldom, each time on a hand-over's path, so their statements' lambdas are
		// linked now.
		acquireCall("", 0, new NodeRegistration("link", "link", "link", 0), Duration.ZERO);
		releaseCall("", Map.of(), this.channel);
	}

	/**
	 * Binds the leases of the given groups to a session of their holder, so that a
	 * follower takes one over the moment that session ends ({@link PostgresSessions}).
	 * When the daemons group is one of them, nodes are bound to their sessions too, so
	 * that a node counts as dead, and its daemons move, the moment its session ends. Call
	 * it before the store is used.
	 * @param groups the groups ({@code leader.lease.crash-takeover-groups})
	 * @param daemonsGroup the group whose leader assigns the daemons
	 * ({@code leader.daemons.group})
	 * @throws IllegalStateException if notifications are off, or the listening connection
	 * reaches the server through a pooler in transaction mode: the session is the
	 * listening connection
	 */
	public void crashTakeover(Collection<String> groups, String daemonsGroup) {
		if (groups.isEmpty()) {
			return;
		}
		if (!this.notifications.heard()) {
			throw new IllegalStateException("leader.lease.crash-takeover-groups " + groups + " needs notifications "
					+ "(leader.jdbc.notifications.enabled=true): a lease is bound to the node's listening connection");
		}
		if (this.notifications.throughTransactionPooler()) {
			throw new IllegalStateException("leader.lease.crash-takeover-groups " + groups + " needs sessions, and the "
					+ "DataSource reaches PostgreSQL through a pooler in transaction mode: set "
					+ "leader.jdbc.notifications.url to a direct connection to the server or to a pool in session "
					+ "mode, where the holder's lease is bound, or turn crash takeover off");
		}
		boolean bindsNodes = groups.contains(daemonsGroup);
		// The round trips' connection, the listening one unless it has a data source of
		// its own, one waiting per group that another node leads, and one for the next
		// node's session.
		int kept = (this.listensOnThePool ? 2 : 1) + groups.size() + (bindsNodes ? 1 : 0);
		PoolRoom.require(this.dataSource, kept,
				() -> "leader.lease.crash-takeover-groups " + groups + " keeps up to " + kept
						+ " connections of the pool for good (its round trips"
						+ (this.listensOnThePool ? ", LISTEN" : "")
						+ ", one waiting for the holder of each such group led elsewhere"
						+ (bindsNodes ? ", one waiting for the next node's session" : "") + ")");
		PostgresSessions sessions = new PostgresSessions(this.connections, this.prefix, groups, bindsNodes);
		this.notifications.session(sessions);
		this.sessions = sessions;
	}

	@Override
	public AcquireResult acquire(String group, NodeRegistration node, Duration duration) {
		AcquireResult result = this.kept.execute("acquire", this.sql.acquire(),
				acquireCall(group, PostgresSessions.groupKey(this.renderedPrefix, group), node, duration));
		PostgresSessions sessions = this.sessions;
		if (sessions != null && result.granted() && result.lease() != null) {
			sessions.held(group, result.lease().term(), node.id());
		}
		return result;
	}

	private static Statements.Callback<AcquireResult> acquireCall(String group, int groupKey, NodeRegistration node,
			Duration duration) {
		return (statement) -> {
			String incarnation = HeartbeatRows.incarnation(node);
			int i = 0;
			statement.setString(++i, group);
			statement.setString(++i, node.id());
			statement.setString(++i, node.id());
			statement.setString(++i, incarnation);
			statement.setInt(++i, groupKey);
			statement.setLong(++i, duration.toMillis());
			statement.setString(++i, node.id());
			statement.setString(++i, incarnation);
			statement.setString(++i, group);
			statement.setString(++i, group);
			statement.setString(++i, node.id());
			statement.setLong(++i, duration.toMillis());
			statement.setString(++i, group);
			statement.setString(++i, group);
			try (ResultSet rows = statement.executeQuery()) {
				Statements.requireDurable(statement);
				if (!rows.next()) {
					return new AcquireResult(false, null);
				}
				return new AcquireResult(rows.getBoolean("granted"), lease(rows));
			}
		};
	}

	@Override
	public Tick tick(NodeRegistration node, Map<String, Long> held, Collection<String> groups, Duration leaseDuration,
			Duration nodeExpiry) {
		PostgresSessions sessions = this.sessions;
		Consumer<DaemonSnapshot> follower = this.daemonsFollower.get();
		DaemonRows daemons = (follower != null) ? new DaemonRows(nodeExpiry) : null;
		String sql = (daemons != null) ? this.sql.tickWithDaemons() : this.sql.tick();
		HeartbeatRows read = new HeartbeatRows(PostgresCoordinationStore::lease, (rows) -> member(rows, nodeExpiry));
		Map<String, Long> memberSessions = new HashMap<>();
		AtomicLong ownSession = new AtomicLong();
		long sentAt = System.nanoTime();
		Tick result = this.kept.execute("heartbeat", sql, (statement) -> {
			Connection connection = statement.getConnection();
			int i = 0;
			statement.setArray(++i, connection.createArrayOf("varchar", held.keySet().toArray()));
			statement.setArray(++i, connection.createArrayOf("bigint", held.values().toArray()));
			statement.setString(++i, node.id());
			statement.setString(++i, node.id());
			statement.setString(++i, node.name());
			statement.setString(++i, node.host());
			statement.setLong(++i, node.pid());
			statement.setString(++i, HeartbeatRows.incarnation(node));
			statement.setArray(++i, connection.createArrayOf("varchar", new TreeSet<>(node.daemons()).toArray()));
			statement.setString(++i, node.baseUrl());
			statement.setString(++i, node.zone());
			statement.setLong(++i, leaseDuration.toMillis());
			statement.setString(++i, node.id());
			statement.setString(++i, HeartbeatRows.incarnation(node));
			statement.setLong(++i, nodeExpiry.toMillis());
			statement.setString(++i, node.id());
			statement.setLong(++i, nodeExpiry.toMillis());
			statement.setLong(++i, leaseDuration.toMillis());
			statement.setString(++i, node.id());
			statement.setArray(++i, connection.createArrayOf("varchar", groups.toArray()));
			statement.setString(++i, node.id());
			statement.setString(++i, node.id());
			try (ResultSet rows = statement.executeQuery()) {
				Statements.requireDurable(statement);
				List<LeaseState> foreign = new ArrayList<>();
				boolean registered = false;
				while (rows.next()) {
					if ("D".equals(rows.getString("kind"))
							&& rows.getLong("heartbeat_age_ms") < nodeExpiry.toMillis()) {
						throw HeartbeatRows.duplicateNodeId(node.id(), rows.getString("host"), rows.getLong("pid"),
								rows.getLong("heartbeat_age_ms"));
					}
					if ("D".equals(rows.getString("kind"))) {
						continue;
					}
					if ("H".equals(rows.getString("kind"))) {
						foreign.add(lease(rows));
						continue;
					}
					read.add(rows);
					if (sessions != null && "L".equals(rows.getString("kind"))) {
						long sessionPid = rows.getLong("pid");
						sessions.observed(rows.getString("group_name"), rows.getString("holder"), rows.getLong("term"),
								rows.wasNull() ? null : sessionPid);
					}
					// The ring leaves out a member whose heartbeat expired: paused, it
					// would not notify.
					if ("N".equals(rows.getString("kind")) && node.id().equals(rows.getString("node_id"))) {
						registered = true;
						ownSession.set(rows.getLong("session_pid"));
					}
					else if ("N".equals(rows.getString("kind")) && rows.getLong("session_pid") > 0
							&& rows.getLong("heartbeat_age_ms") < nodeExpiry.toMillis()) {
						memberSessions.put(rows.getString("node_id"), rows.getLong("session_pid"));
					}
					if (daemons != null) {
						daemons.add(rows);
					}
				}
				if (!foreign.isEmpty()) {
					throw HeartbeatRows.leasesOfAnotherProcess(node.id(), foreign);
				}
				if (!registered) {
					// Another process registered the id in the same moment (the upsert
					// waited for its insert, and then changed nothing), or holds leases
					// under it that have not expired.
					throw HeartbeatRows.registeredMeanwhile(node.id());
				}
			}
			return read.tick();
		});
		this.logFollowers.heads(read.logHeads(), sentAt);
		if (sessions != null) {
			result.renewed().forEach((group, lease) -> sessions.held(group, lease.term(), node.id()));
			sessions.notHeldExcept(result.renewed().keySet());
			sessions.members(node.id(), HeartbeatRows.incarnation(node), ownSession.get(), memberSessions);
		}
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
	 * Makes every heartbeat statement from now on also read the nodes' daemons, the
	 * assignments and the requests, and hands each snapshot so read to the follower, so
	 * that a node polls its assignments without a statement of its own.
	 * @param follower called with each snapshot, on the thread that sent the heartbeat,
	 * after the heartbeat's rows were read; it must return quickly
	 * @return a handle that stops the reading and the delivery
	 */
	@Override
	public AutoCloseable readDaemonsWithHeartbeat(Consumer<DaemonSnapshot> follower) {
		this.daemonsFollower.set(follower);
		return () -> this.daemonsFollower.compareAndSet(follower, null);
	}

	/**
	 * Hands the last index of each group's decision log, as every heartbeat reads it with
	 * the group's lease, to the follower.
	 * @param follower called on the heartbeat's thread after each heartbeat
	 * @return a handle that stops it
	 */
	@Override
	public AutoCloseable followLogHeads(LogHeadsFollower follower) {
		return this.logFollowers.add(follower);
	}

	@Override
	public Collection<String> release(String nodeId, Map<String, Long> held) {
		Collection<String> released = this.kept.execute("release", this.sql.release(),
				releaseCall(nodeId, held, this.channel));
		PostgresSessions sessions = this.sessions;
		if (sessions != null) {
			sessions.released(held.keySet());
		}
		return released;
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
			return Statements.list(statement, RowReader.GROUP_NAME);
		};
	}

	@Override
	public void deregister(NodeRegistration node) {
		this.kept.execute("deregister", this.sql.deregister(), (statement) -> {
			statement.setString(1, node.id());
			statement.setString(2, HeartbeatRows.incarnation(node));
			return statement.executeUpdate();
		});
	}

	@Override
	public List<LeaseState> leases() {
		return this.kept.execute("read leases", this.sql.leases(),
				(statement) -> Statements.list(statement, PostgresCoordinationStore::lease));
	}

	/**
	 * Gives the kept connection back to the pool, and waits up to 2 s for a listening
	 * connection that no channel is followed on any more to be given back too (it notices
	 * within half a second); the next round trip borrows one again. Called by the engine
	 * when it stops, and by the application context when it closes.
	 */
	@Override
	public void disconnect() {
		this.kept.giveBack();
		this.notifications.awaitStopped();
	}

	/**
	 * Checks that the data source leads to a writable primary, as the store's statements
	 * need.
	 * @throws IllegalStateException if its connections are read-only, or lead to a
	 * standby or a read-only database
	 * @throws org.springframework.dao.DataAccessException if the database cannot be
	 * reached
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
		PostgresSessions sessions = this.sessions;
		if (sessions == null) {
			return subscribeReleases(listener);
		}
		sessions.listen(listener);
		AutoCloseable releases = subscribeReleases(listener);
		return () -> {
			releases.close();
			sessions.listen(null);
		};
	}

	private AutoCloseable subscribeReleases(ReleaseListener listener) {
		// The payload is the group name, then a space and the successor if there is one;
		// neither name has spaces.
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
	 * @param channel the channel, a prefixed name of this package's stores, never user
	 * input
	 * @param subscriber called with each notification's payload, on the
	 * {@code leader-listen} thread; it must return quickly
	 * @return a handle that stops following the channel for this subscriber
	 * @see NotificationHub#subscribe
	 */
	AutoCloseable subscribe(String channel, Consumer<String> subscriber) {
		return this.notifications.subscribe(channel, subscriber);
	}

	private static NodeInfo member(ResultSet rows, Duration nodeExpiry) throws SQLException {
		return new NodeInfo(rows.getString("node_id"), rows.getString("name"), rows.getString("host"),
				rows.getLong("pid"), Statements.instant(rows, "started_at"), Statements.instant(rows, "heartbeat_at"),
				rows.getLong("heartbeat_age_ms") < nodeExpiry.toMillis() && !DaemonRows.sessionEnded(rows),
				rows.getString("base_url"), rows.getString("zone"));
	}

	private static LeaseState lease(ResultSet rows) throws SQLException {
		return new LeaseState(rows.getString("group_name"), rows.getString("holder"), rows.getLong("term"),
				Statements.instant(rows, "expires_at"), Duration.ofMillis(rows.getLong("remaining_ms")));
	}

}
