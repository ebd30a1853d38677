package dev.leader.mariadb;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

import javax.sql.DataSource;

import dev.leader.daemon.DaemonSnapshot;
import dev.leader.jdbc.HeartbeatReads;
import dev.leader.jdbc.HeartbeatRows;
import dev.leader.jdbc.LogHeadsFollower;
import dev.leader.jdbc.LogHeadsFollowers;
import dev.leader.jdbc.PoolRoom;
import dev.leader.jdbc.RowReader;
import dev.leader.jdbc.Statements;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.LeaseState;
import dev.leader.node.NodeRegistration;
import dev.leader.node.OwnThreads;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * {@link CoordinationStore} on MariaDB 10.11 and later. Every transition is one
 * transaction ({@link MariaDbConnections}), but for the heartbeat, whose statements each
 * commit on their own where the pool's connections auto-commit
 * ({@link MariaDbHeartbeat}); every time comparison uses the database's clock at the
 * moment of the comparison, in UTC ({@link MariaDbSql#NOW}), and a term is the fencing
 * token, as on PostgreSQL.
 * <p>
 * <b>Locks.</b> InnoDB has no {@code FOR KEY SHARE}: a guard's shared lock on the lease
 * row would hold up every renewal of it. So guards lock the group's row in
 * {@code lease_terms}, which only a change of holder or term updates, and the renewal
 * updates the row in {@code leases} alone. A grant and a release lock the
 * {@code lease_terms} row first ({@code FOR UPDATE}), which waits for every guarded
 * transaction of the old term, then the {@code leases} row, and change both. InnoDB
 * queues a new shared lock behind a waiting exclusive one, so new guards cannot starve a
 * release, as PostgreSQL's {@code FOR KEY SHARE} can.
 * <p>
 * <b>What is weaker than on PostgreSQL.</b> No notifications: {@link #listen} delivers a
 * wake-up hint instead ({@link MariaDbWakeUps}), and without it followers acquire when
 * the lease expires or on their retry interval. No epoch: terms do not rise across a
 * failover of the server, so a grant lost with an old primary can be granted again under
 * the same term. Durability is the server's ({@code innodb_flush_log_at_trx_commit}, and
 * {@code sync_binlog} with the binary log on, checked at startup), since MariaDB cannot
 * make one transaction's commit durable on its own. A round trip is a transaction of a
 * few statements, not one statement.
 * <p>
 * Public so that a node can also be built without a Spring context.
 */
public final class MariaDbCoordinationStore implements CoordinationStore, HeartbeatReads {

	private static final Log logger = LogFactory.getLog(MariaDbCoordinationStore.class);

	private static final String LEASE_COLUMNS = "group_name, holder, term, expires_at, ${remaining_ms} AS remaining_ms";

	/**
	 * The lease as it stands, without a lock, for an attempt on a lease that another node
	 * holds: it locks nothing, so it waits for no guard.
	 */
	private static final String READ_LEASE = "SELECT " + LEASE_COLUMNS + ", (expires_at <= ${now} OR "
			+ MariaDbSql.SESSION_GONE + ") AS free FROM ${prefix}leases WHERE group_name = ?";

	/**
	 * The first lock of a grant or release: the row guards lock in share mode.
	 */
	private static final String LOCK_TERM = "SELECT term FROM ${prefix}lease_terms WHERE group_name = ? FOR UPDATE";

	/**
	 * Creates the group's empty log head, if absent, in a grant, which holds the
	 * {@code lease_terms} row: no append can be creating it at the same time, so appends
	 * only ever update it. Concurrent first appends that each inserted it could deadlock.
	 */
	private static final String CREATE_LOG_HEAD = """
			INSERT INTO ${prefix}log_heads (group_name, last_index, last_term, appended_at) VALUES (?, 0, 0, ${now})
			ON DUPLICATE KEY UPDATE group_name = group_name""";

	/**
	 * The lease locked for a grant, with the database time after the lock was granted,
	 * and whether it is free: expired, or bound to a session that no longer holds its
	 * term's lock ({@link MariaDbSql#SESSION_GONE}), both evaluated once the row is
	 * locked.
	 */
	private static final String LOCK_LEASE = "SELECT holder, term, (expires_at <= ${now} OR " + MariaDbSql.SESSION_GONE
			+ ") AS free, ${now} AS now FROM ${prefix}leases WHERE group_name = ? FOR UPDATE";

	/**
	 * Whether the node's row is this process's, read without a lock before a grant again
	 * of a lease held under the node's id.
	 */
	private static final String OWN_NODE = "SELECT 1 FROM ${prefix}nodes WHERE node_id = ? AND incarnation = ?";

	/**
	 * The grant as a heartbeat of the node's registration, if it is still this process's:
	 * the last lock of a grant, so that the grant waits for no guard while holding it,
	 * and a process that would take the id over waits for the grant's commit, then finds
	 * the node alive. Like the heartbeat, it changes the row whenever it finds it, since
	 * the time changes, so the count of changed rows tells whether it did.
	 */
	private static final String TOUCH_OWN_NODE = "UPDATE ${prefix}nodes SET heartbeat_at = ${now} "
			+ "WHERE node_id = ? AND incarnation = ?";

	private static final String INSERT_TERM = """
			INSERT INTO ${prefix}lease_terms (group_name, holder, term) VALUES (?, ?, ?)""";

	private static final String INSERT_LEASE = """
			INSERT INTO ${prefix}leases (group_name, holder, term, acquired_at, renewed_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ? + INTERVAL ? MICROSECOND)""";

	private static final String GRANT_TERM = "UPDATE ${prefix}lease_terms SET holder = ?, term = ? WHERE group_name = ?";

	private static final String GRANT_LEASE = """
			UPDATE ${prefix}leases SET holder = ?, term = ?, session_id = NULL, acquired_at = ?, renewed_at = ?,
			  expires_at = ? + INTERVAL ? MICROSECOND
			WHERE group_name = ?""";

	/**
	 * The first step of a release: locks the {@code lease_terms} rows the node holds with
	 * the given terms, in a fixed order, which waits for the guarded transactions of
	 * those terms.
	 */
	private static final String LOCK_RELEASED = """
			SELECT group_name FROM ${prefix}lease_terms
			WHERE group_name IN (/*groups*/) AND (group_name, term) IN (/*terms*/) AND holder = ?
			ORDER BY group_name FOR UPDATE""";

	private static final String RELEASE_TERMS = """
			UPDATE ${prefix}lease_terms SET holder = NULL WHERE group_name IN (/*groups*/)""";

	private static final String RELEASE_LEASES = """
			UPDATE ${prefix}leases SET holder = NULL, session_id = NULL, expires_at = ${now} WHERE group_name IN (/*groups*/)""";

	private static final String DEREGISTER = "DELETE FROM ${prefix}nodes WHERE node_id = ? AND incarnation = ?";

	private static final String LEASES = "SELECT " + LEASE_COLUMNS + " FROM ${prefix}leases ORDER BY group_name";

	private final DataSource dataSource;

	private final MariaDbConnections connections;

	private final MariaDbHeartbeat heartbeat;

	private final LogHeadsFollowers logFollowers = new LogHeadsFollowers();

	private final AtomicReference<@Nullable Consumer<DaemonSnapshot>> daemonsFollower = new AtomicReference<>();

	/**
	 * Where the wake-ups bind the crash-takeover terms this node is granted to the
	 * holding session: one thread at most, in order, ended after a second idle.
	 */
	private final ThreadPoolExecutor afterGrants = new ThreadPoolExecutor(0, 1, 1, TimeUnit.SECONDS,
			new LinkedBlockingQueue<>(), (task) -> OwnThreads.daemon("leader-wake-grant", task));

	private volatile Future<?> lastGrant = CompletableFuture.completedFuture(null);

	private final @Nullable MariaDbWakeUps wakeUps;

	// The latest expiry of each group's lease that this store saw committed, with its
	// term, for the guards in callers' transactions (MariaDbSql.LOCK_LEASE_BEFORE).
	private final Map<String, Expiry> expiries = new ConcurrentHashMap<>();

	private final MariaDbSql.Rendered sql;

	/**
	 * Creates a store.
	 * @param dataSource the MariaDB data source
	 * @param tablePrefix the prefix of the starter's tables
	 * @param queryTimeout the longest a statement may run; rounded up to whole seconds
	 */
	public MariaDbCoordinationStore(DataSource dataSource, TablePrefix tablePrefix, Duration queryTimeout) {
		this(dataSource, tablePrefix, queryTimeout, true);
	}

	/**
	 * Creates a store.
	 * @param dataSource the MariaDB data source
	 * @param tablePrefix the prefix of the starter's tables
	 * @param queryTimeout the longest a statement may run; rounded up to whole seconds
	 * @param wakeUps whether a release wakes the nodes that follow the group at once
	 * ({@link MariaDbWakeUps}), at the cost of connections kept from the pool; without,
	 * they acquire when the lease would have expired or on their retry interval
	 */
	public MariaDbCoordinationStore(DataSource dataSource, TablePrefix tablePrefix, Duration queryTimeout,
			boolean wakeUps) {
		this.dataSource = dataSource;
		this.connections = new MariaDbConnections(dataSource, queryTimeout);
		this.heartbeat = new MariaDbHeartbeat(this.connections, tablePrefix);
		this.wakeUps = wakeUps
				? new MariaDbWakeUps(dataSource, tablePrefix, this.connections.statements().timeoutSeconds()) : null;
		this.sql = MariaDbSql.renderAll(tablePrefix, READ_LEASE, LOCK_TERM, CREATE_LOG_HEAD, LOCK_LEASE, OWN_NODE,
				TOUCH_OWN_NODE, INSERT_TERM, INSERT_LEASE, GRANT_TERM, GRANT_LEASE, LOCK_RELEASED, RELEASE_TERMS,
				RELEASE_LEASES, DEREGISTER, LEASES);
	}

	/**
	 * Binds the leases of the given groups to a session of their holder, so that a
	 * follower takes one over the moment that session ends, and the holder steps down the
	 * moment it notices ({@link MariaDbWakeUps}, crash takeover). Call it before the
	 * store is used.
	 * <p>
	 * Costs, on top of the wake-ups': on a node that leads such a group, a connection of
	 * the pool that watches the session holding its locks, waiting in one statement per
	 * {@link MariaDbSessionWatcher#WAIT_SECONDS}; two statements after each grant, on a
	 * thread of their own. Followers wait as they do for a release, on their wake-up
	 * connection per group led by another node.
	 * <p>
	 * When the daemons group is one of them, nodes are bound to their sessions too, so
	 * that a node counts as dead, and its daemons move, the moment its session ends
	 * ({@link MariaDbWakeUps}); and the daemon store built with this store rings nodes
	 * when their assignments change ({@link MariaDbBells}). That costs each node two more
	 * connections: one that waits for the next node's session, one that waits to be rung.
	 * @param groups the groups ({@code leader.lease.crash-takeover-groups})
	 * @param daemonsGroup the group whose leader assigns the daemons
	 * ({@code leader.daemons.group})
	 * @throws IllegalStateException if the wake-ups are off: the holder's session is the
	 * connection that holds its wake-up locks, and followers learn of its end by waiting
	 * for them
	 */
	public void crashTakeover(Collection<String> groups, String daemonsGroup) {
		if (groups.isEmpty()) {
			return;
		}
		if (this.wakeUps == null) {
			throw new IllegalStateException("leader.lease.crash-takeover-groups " + groups + " needs the MariaDB "
					+ "wake-ups (leader.jdbc.notifications.enabled=true): a lease is bound to the session that "
					+ "holds its holder's wake-up locks, and followers learn of its end by waiting for them");
		}
		boolean bindsNodes = groups.contains(daemonsGroup);
		// The session that holds the wake-up locks and its watcher, a wait per group that
		// another node leads, and the waits for the next node's session and for a ring.
		int kept = 2 + groups.size() + (bindsNodes ? 2 : 0);
		PoolRoom.require(this.dataSource, kept, () -> "leader.lease.crash-takeover-groups " + groups + " keeps at "
				+ "least " + kept + " connections of the pool for good (the session that holds the wake-up locks, its "
				+ "watcher, one waiting for the holder of each such group led elsewhere"
				+ (bindsNodes ? ", one waiting for the next node's session, one waiting to be rung" : "") + ")");
		this.wakeUps.bind(groups, daemonsGroup);
	}

	/**
	 * Grants the lease in one transaction: reads it without a lock, and refuses at once
	 * if another node holds it; otherwise locks its {@code lease_terms} row, which waits
	 * for the guards of the old term, then its {@code leases} row, checks again under the
	 * locks and by the database time read after them, and raises the term in both rows. A
	 * lease created by another node since the read is refused (the insert meets its key),
	 * and the engine tries again. Last, it locks the node's row if it is still this
	 * process's registration, refusing otherwise, and refreshes its heartbeat, so that
	 * another process never takes the id over, nor registers it, around the grant.
	 */
	@Override
	public AcquireResult acquire(String group, NodeRegistration node, Duration duration) {
		String nodeId = node.id();
		String incarnation = HeartbeatRows.incarnation(node);
		long micros = duration.toNanos() / 1000;
		AcquireResult result = this.connections.transaction("acquire", (tx) -> {
			Lease read = readLease(tx, group);
			if (read != null && read.lease().holder() != null && !read.free()
					&& (!nodeId.equals(read.lease().holder()) || !ownsRow(tx, nodeId, incarnation))) {
				// Held by another node, or under this node's id by another process that
				// took the id over: refused before any lock, so that this attempt never
				// holds a lock that the holder's heartbeat waits for.
				return new AcquireResult(false, read.lease());
			}
			Long term = tx.run(sql(LOCK_TERM), (statement) -> {
				statement.setString(1, group);
				try (ResultSet rows = statement.executeQuery()) {
					return rows.next() ? rows.getLong("term") : null;
				}
			});
			if (term == null) {
				// Nothing to wait for: the node's row first, so that nothing is created
				// for a process that is refused.
				return registered(tx, nodeId, incarnation) ? create(tx, group, nodeId, micros)
						: new AcquireResult(false, null);
			}
			Locked locked = tx.run(sql(LOCK_LEASE), (statement) -> {
				statement.setString(1, group);
				try (ResultSet rows = statement.executeQuery()) {
					rows.next();
					return new Locked(rows.getString("holder"), rows.getBoolean("free"),
							rows.getObject("now", LocalDateTime.class));
				}
			});
			if ((locked.holder() != null && !nodeId.equals(locked.holder()) && !locked.free())
					|| !registered(tx, nodeId, incarnation)) {
				return new AcquireResult(false, readLease(tx, group).lease());
			}
			long next = term + 1;
			tx.update(sql(GRANT_TERM), nodeId, next, group);
			tx.update(sql(GRANT_LEASE), nodeId, next, locked.now(), locked.now(), locked.now(), micros, group);
			tx.update(sql(CREATE_LOG_HEAD), group);
			return new AcquireResult(true, readLease(tx, group).lease());
		});
		LeaseState lease = result.lease();
		if (lease != null) {
			saw(lease);
			MariaDbWakeUps wakeUps = this.wakeUps;
			if (wakeUps != null) {
				awaitGrants();
				// The group's lock at once, so that the followers refused wait for it.
				wakeUps.observed(lease, nodeId, false);
				if (result.granted() && wakeUps.binds(group)) {
					// The binding off the grant's path: nobody can take a term over by
					// its session before it is bound.
					this.lastGrant = this.afterGrants.submit(() -> bind(wakeUps, lease, nodeId));
				}
			}
		}
		return result;
	}

	// Whether the node's row is this process's, read without a lock.
	private boolean ownsRow(MariaDbConnections.Transaction tx, String nodeId, String incarnation) throws SQLException {
		return tx.run(sql(OWN_NODE), (statement) -> {
			statement.setString(1, nodeId);
			statement.setString(2, incarnation);
			try (ResultSet rows = statement.executeQuery()) {
				return rows.next();
			}
		});
	}

	// Locks the node's row and refreshes its heartbeat if it is this process's.
	private boolean registered(MariaDbConnections.Transaction tx, String nodeId, String incarnation)
			throws SQLException {
		return tx.update(sql(TOUCH_OWN_NODE), nodeId, incarnation) > 0;
	}

	private static void bind(MariaDbWakeUps wakeUps, LeaseState lease, String nodeId) {
		try {
			wakeUps.observed(lease, nodeId, true);
		}
		catch (RuntimeException | Error ex) {
			logger.warn("Could not bind the lease of " + lease.group() + " to the session holding this node's locks; "
					+ "the next renewal tries again: " + ex, ex);
		}
	}

	/**
	 * Waits until the wake-ups have bound the grants made so far, so that they learn of
	 * each lease in the order of this node's round trips: each binding's statements are
	 * bounded by the query timeout, and its borrow by the pool's.
	 */
	private void awaitGrants() {
		try {
			this.lastGrant.get();
		}
		catch (ExecutionException ex) {
			// bind logs its failures
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	private AcquireResult create(MariaDbConnections.Transaction tx, String group, String nodeId, long micros)
			throws SQLException {
		LocalDateTime now = tx.now();
		try {
			tx.update(sql(INSERT_TERM), group, nodeId, 1L);
		}
		catch (SQLException ex) {
			if (ex.getErrorCode() != MariaDbErrors.DUPLICATE_KEY) {
				throw ex;
			}
			// Created by another node since the read: refused, as on PostgreSQL, and
			// read in a statement of its own, which sees the other node's commit.
			Lease lease = readLease(tx, group);
			return new AcquireResult(false, (lease != null) ? lease.lease() : null);
		}
		tx.update(sql(INSERT_LEASE), group, nodeId, 1L, now, now, now, micros);
		tx.update(sql(CREATE_LOG_HEAD), group);
		return new AcquireResult(true, readLease(tx, group).lease());
	}

	private @Nullable Lease readLease(MariaDbConnections.Transaction tx, String group) throws SQLException {
		return tx.run(sql(READ_LEASE), (statement) -> {
			statement.setString(1, group);
			try (ResultSet rows = statement.executeQuery()) {
				return rows.next() ? new Lease(lease(rows), rows.getBoolean("free")) : null;
			}
		});
	}

	/**
	 * The heartbeat ({@link MariaDbHeartbeat}). The wake-ups observe the leases and the
	 * nodes' sessions it read, and the log followers get the heads it read.
	 */
	@Override
	public Tick tick(NodeRegistration node, Map<String, Long> held, Collection<String> groups, Duration leaseDuration,
			Duration nodeExpiry) {
		long sentAt = System.nanoTime();
		Map<String, Long> sessions = new HashMap<>();
		Consumer<DaemonSnapshot> follower = this.daemonsFollower.get();
		MariaDbDaemonRows daemons = (follower != null) ? new MariaDbDaemonRows(nodeExpiry) : null;
		HeartbeatRows read = this.heartbeat.run(node, held, groups, leaseDuration, nodeExpiry, sessions, daemons);
		Tick result = read.tick();
		result.renewed().values().forEach(this::saw);
		result.leases().values().forEach(this::saw);
		if (this.wakeUps != null) {
			awaitGrants();
			this.wakeUps.checkHolding();
			result.renewed().values().forEach((lease) -> this.wakeUps.observed(lease, node.id(), true));
			result.leases().values().forEach((lease) -> this.wakeUps.observed(lease, node.id(), false));
			this.wakeUps.members(node.id(), HeartbeatRows.incarnation(node), sessions);
		}
		this.logFollowers.heads(read.logHeads(), sentAt);
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
	 * Makes every heartbeat from now on also read the nodes' daemons, the assignments and
	 * the requests in its read statement, and hands each snapshot so read to the
	 * follower, so that a node polls its assignments without a statement of its own.
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
	 * Returns the latest expiry of a term of a group's lease that this store saw
	 * committed, by an acquire or a heartbeat of any node through it. A renewal only
	 * moves a term's expiry later, so it is a lower bound of the term's expiry for as
	 * long as the term keeps its holder.
	 * @param group the group
	 * @param term the term
	 * @return the expiry, a UTC {@code DATETIME(6)} parameter, or {@code null} if this
	 * store saw none of that term (or has seen a later term since)
	 */
	@Nullable LocalDateTime expiry(String group, long term) {
		Expiry expiry = this.expiries.get(group);
		return (expiry != null && expiry.term() == term) ? expiry.at() : null;
	}

	// Called once the transaction that read the lease has committed.
	private void saw(LeaseState lease) {
		LocalDateTime at = MariaDbConnections.parameter(lease.expiresAt());
		if (lease.holder() != null && at != null) {
			this.expiries.merge(lease.group(), new Expiry(lease.term(), at), Expiry::later);
		}
	}

	/**
	 * Returns the doorbells of the daemon store, where nodes are bound to their sessions
	 * ({@link #crashTakeover}).
	 * @return the bells, or {@code null}
	 */
	@Nullable MariaDbBells bells() {
		return (this.wakeUps != null) ? this.wakeUps.bells() : null;
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

	/**
	 * Releases in one transaction: locks the node's {@code lease_terms} rows with the
	 * given terms, in group order, which waits for the guards of those terms, then clears
	 * the holder of both rows of each and sets its expiry to the database's now, keeping
	 * the term.
	 */
	@Override
	public Collection<String> release(String nodeId, Map<String, Long> held) {
		if (held.isEmpty()) {
			return List.of();
		}
		Map<String, Long> sorted = new TreeMap<>(held);
		Collection<String> released = this.connections.transaction("release", (tx) -> {
			List<String> locked = tx.run(MariaDbSql.inLists(sql(LOCK_RELEASED), sorted, List.of()), (statement) -> {
				int i = MariaDbSql.bindHeld(statement, 0, sorted);
				statement.setString(++i, nodeId);
				return Statements.list(statement, RowReader.GROUP_NAME);
			});
			if (!locked.isEmpty()) {
				String markers = MariaDbSql.markers(locked.size());
				tx.update(sql(RELEASE_TERMS).replace("/*groups*/", markers), locked.toArray());
				tx.update(sql(RELEASE_LEASES).replace("/*groups*/", markers), locked.toArray());
			}
			return locked;
		});
		if (this.wakeUps != null) {
			awaitGrants();
			this.wakeUps.giveBack(nodeId, released);
		}
		return released;
	}

	/**
	 * Wakes the listener when another node releases a lease this node follows, or its
	 * session ends: a hint from {@link MariaDbWakeUps}, without the successor, which
	 * MariaDB cannot tell; this store's own releases wake other stores' listeners, never
	 * its own.
	 */
	@Override
	public AutoCloseable listen(ReleaseListener listener) {
		return (this.wakeUps != null) ? this.wakeUps.listen(listener) : () -> {
		};
	}

	/**
	 * Gives back the connection that holds this node's wake-up locks.
	 */
	@Override
	public void disconnect() {
		if (this.wakeUps != null) {
			awaitGrants();
			this.wakeUps.disconnect();
		}
	}

	@Override
	public void deregister(NodeRegistration node) {
		this.connections.transaction("deregister",
				(tx) -> tx.update(sql(DEREGISTER), node.id(), HeartbeatRows.incarnation(node)));
	}

	@Override
	public List<LeaseState> leases() {
		return this.connections.transaction("read leases", (tx) -> tx.run(sql(LEASES),
				(statement) -> Statements.list(statement, MariaDbCoordinationStore::lease)));
	}

	/**
	 * Checks that the data source leads to a writable MariaDB server, and warns if the
	 * server may lose commits in a crash.
	 * @throws IllegalStateException if its connections or the server are read-only
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

	private String sql(String template) {
		return this.sql.of(template);
	}

	static LeaseState lease(ResultSet rows) throws SQLException {
		Instant expiresAt = MariaDbConnections.instant(rows, "expires_at");
		return new LeaseState(rows.getString("group_name"), rows.getString("holder"), rows.getLong("term"),
				(expiresAt != null) ? expiresAt : Instant.EPOCH, Duration.ofMillis(rows.getLong("remaining_ms")));
	}

	private record Lease(LeaseState lease, boolean free) {
	}

	private record Locked(@Nullable String holder, boolean free, LocalDateTime now) {
	}

	private record Expiry(long term, LocalDateTime at) {

		Expiry later(Expiry other) {
			if (term() != other.term()) {
				return (term() > other.term()) ? this : other;
			}
			return at().isAfter(other.at()) ? this : other;
		}

	}

}
