package dev.leader.mariadb;

import java.sql.SQLException;
import java.time.Duration;

import javax.sql.DataSource;

import dev.leader.autoconfigure.LeaderProperties;
import dev.leader.daemon.DaemonStore;
import dev.leader.fencing.FencingStore;
import dev.leader.jdbc.FencesOnlyFencingStore;
import dev.leader.jdbc.JdbcDialect;
import dev.leader.jdbc.JdbcStoreContext;
import dev.leader.jdbc.JdbcStoreFamily;
import dev.leader.jdbc.Statements;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.LeaseSettings;
import dev.leader.log.LogStore;
import org.jspecify.annotations.Nullable;

/**
 * The MariaDB stores, built together: the coordination store's heartbeat reads the daemon
 * rows and the logs' last indexes ({@link dev.leader.jdbc.HeartbeatReads}), its wake-ups
 * ring the nodes when their assignments change, and its grants and renewals tell the
 * guards the expiry of the node's terms, when the coordination store in use is the one
 * this family built. Defined by {@link MariaDbStoresAutoConfiguration}.
 */
public final class MariaDbStoreFamily implements JdbcStoreFamily {

	private volatile @Nullable MariaDbCoordinationStore coordinationStore;

	/**
	 * Creates the family.
	 */
	public MariaDbStoreFamily() {
	}

	@Override
	public JdbcDialect dialect() {
		return JdbcDialect.MARIADB;
	}

	@Override
	public void requireWritablePrimary(DataSource dataSource) {
		try {
			new MariaDbConnections(dataSource, Duration.ofSeconds(10)).requireWritablePrimary();
		}
		catch (SQLException ex) {
			throw Statements.translate("check the database", ex);
		}
	}

	@Override
	public CoordinationStore coordinationStore(JdbcStoreContext context) {
		LeaderProperties properties = context.properties();
		MariaDbCoordinationStore store = new MariaDbCoordinationStore(context.dataSource(), context.prefix(),
				context.queryTimeout(), properties.getJdbc().getNotifications().isEnabled());
		store.crashTakeover(properties.getLease().getCrashTakeoverGroups(), properties.getDaemons().getGroup());
		context.requireWritablePrimaryUnlessMigrated(store::requireWritablePrimary);
		this.coordinationStore = store;
		return store;
	}

	@Override
	public DaemonStore daemonStore(JdbcStoreContext context, LeaseSettings settings,
			@Nullable CoordinationStore coordinationStore) {
		// The heartbeat reads the assignments when the coordination store is ours, and
		// rings nodes when they change where it binds nodes to their sessions.
		return new MariaDbDaemonStore(context.dataSource(), context.prefix(), context.queryTimeout(),
				settings.nodeExpiry().minus(settings.safetyMargin()), own(coordinationStore));
	}

	@Override
	public LogStore logStore(JdbcStoreContext context, LeaseSettings settings,
			@Nullable CoordinationStore coordinationStore) {
		// The coordination store's heartbeat reads the logs' last indexes when it is
		// ours; an append holds the lease as a guard does.
		return new MariaDbLogStore(context.dataSource(), context.prefix(), context.queryTimeout(),
				settings.safeWindow(), own(coordinationStore));
	}

	@Override
	public FencingStore fencingStore(JdbcStoreContext context, LeaseSettings settings,
			@Nullable CoordinationStore coordinationStore) {
		// A guarded transaction cannot usefully outlast the holder's own belief in its
		// leadership. The guard learns the expiry of the node's terms from the
		// coordination store's grants and renewals, when it is ours.
		MariaDbCoordinationStore own = own(coordinationStore);
		FencingStore store = new MariaDbFencingStore(context.dataSource(), context.prefix(), context.queryTimeout(),
				settings.safeWindow(), own);
		// Leases kept elsewhere cannot guard a transaction here; the fences can.
		return (coordinationStore != null && own == null) ? new FencesOnlyFencingStore(store) : store;
	}

	// The coordination store this family built, if it is the one in use.
	private @Nullable MariaDbCoordinationStore own(@Nullable CoordinationStore inUse) {
		MariaDbCoordinationStore built = this.coordinationStore;
		return (built != null && built == inUse) ? built : null;
	}

}
