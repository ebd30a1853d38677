package dev.leader.postgres;

import java.sql.SQLException;

import javax.sql.DataSource;

import dev.leader.autoconfigure.LeaderProperties;
import dev.leader.daemon.DaemonStore;
import dev.leader.fencing.FencingStore;
import dev.leader.jdbc.CoordinationDataSource;
import dev.leader.jdbc.FencesOnlyFencingStore;
import dev.leader.jdbc.JdbcDialect;
import dev.leader.jdbc.JdbcStoreContext;
import dev.leader.jdbc.JdbcStoreFamily;
import dev.leader.jdbc.OwnConnections;
import dev.leader.jdbc.Statements;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.LeaseSettings;
import dev.leader.log.LogStore;
import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.datasource.SimpleDriverDataSource;

/**
 * The PostgreSQL stores, built together: the daemon and log stores follow their
 * notifications on the coordination store's listening connection, and read their rows
 * with its heartbeat ({@link dev.leader.jdbc.HeartbeatReads}), when the coordination
 * store in use is the one this family built. Defined by
 * {@link PostgresStoresAutoConfiguration}.
 */
public final class PostgresStoreFamily implements JdbcStoreFamily {

	private volatile @Nullable PostgresCoordinationStore coordinationStore;

	/**
	 * Creates the family.
	 */
	public PostgresStoreFamily() {
	}

	@Override
	public JdbcDialect dialect() {
		return JdbcDialect.POSTGRESQL;
	}

	@Override
	public void requireWritablePrimary(DataSource dataSource) {
		try {
			new OwnConnections(dataSource).requireWritablePrimary();
		}
		catch (SQLException ex) {
			throw Statements.translate("check the database", ex);
		}
	}

	@Override
	public CoordinationStore coordinationStore(JdbcStoreContext context) {
		LeaderProperties properties = context.properties();
		PostgresCoordinationStore store = new PostgresCoordinationStore(context.dataSource(), context.prefix(),
				context.queryTimeout(),
				notifications(properties.getJdbc().getNotifications(), context.coordinationDataSource()));
		store.crashTakeover(properties.getLease().getCrashTakeoverGroups(), properties.getDaemons().getGroup());
		context.requireWritablePrimaryUnlessMigrated(store::requireWritablePrimary);
		this.coordinationStore = store;
		return store;
	}

	@Override
	public DaemonStore daemonStore(JdbcStoreContext context, LeaseSettings settings,
			@Nullable CoordinationStore coordinationStore) {
		// Assignment notifications share the coordination store's listening connection
		// when it is ours. A guarded daemon transaction ends before its node can be
		// declared dead and the daemon reclaimed.
		return new PostgresDaemonStore(context.dataSource(), context.prefix(), context.queryTimeout(),
				settings.nodeExpiry().minus(settings.safetyMargin()), own(coordinationStore));
	}

	@Override
	public LogStore logStore(JdbcStoreContext context, LeaseSettings settings,
			@Nullable CoordinationStore coordinationStore) {
		// The coordination store's heartbeat reads the logs' last indexes, and its
		// listening connection follows the append notifications, when it is ours; an
		// append holds the lease as a guard does.
		return new PostgresLogStore(context.dataSource(), context.prefix(), context.queryTimeout(),
				settings.safeWindow(), own(coordinationStore));
	}

	@Override
	public FencingStore fencingStore(JdbcStoreContext context, LeaseSettings settings,
			@Nullable CoordinationStore coordinationStore) {
		// A guarded transaction cannot usefully outlast the holder's own belief in its
		// leadership.
		FencingStore store = new PostgresFencingStore(context.dataSource(), context.prefix(), context.queryTimeout(),
				settings.safeWindow());
		// Leases kept elsewhere cannot guard a transaction here; the fences can.
		return (coordinationStore != null && own(coordinationStore) == null) ? new FencesOnlyFencingStore(store)
				: store;
	}

	// The coordination store this family built, if it is the one in use.
	private @Nullable PostgresCoordinationStore own(@Nullable CoordinationStore inUse) {
		PostgresCoordinationStore built = this.coordinationStore;
		return (built != null && built == inUse) ? built : null;
	}

	static Notifications notifications(LeaderProperties.Jdbc.Notifications notifications,
			CoordinationDataSource dataSource) {
		String url = notifications.getUrl();
		if (!notifications.isEnabled()) {
			return Notifications.off();
		}
		if (url == null || url.isBlank()) {
			return Notifications.pooled();
		}
		if (!url.startsWith("jdbc:postgresql:")) {
			int query = url.indexOf('?');
			throw new IllegalArgumentException("leader.jdbc.notifications.url must be a PostgreSQL JDBC URL "
					+ "(jdbc:postgresql://host:port/database), was " + ((query < 0) ? url : url.substring(0, query)));
		}
		String username = notifications.getUsername();
		String password = notifications.getPassword();
		if (username == null) {
			username = dataSource.username();
		}
		if (password == null) {
			password = dataSource.password();
		}
		return Notifications.direct(new SimpleDriverDataSource(new org.postgresql.Driver(), url, username, password));
	}

}
