package dev.leader.jdbc;

import javax.sql.DataSource;

import dev.leader.alone.LeaderMode;
import dev.leader.autoconfigure.LeaderAutoConfiguration;
import dev.leader.autoconfigure.LeaderProperties;
import dev.leader.daemon.DaemonStore;
import dev.leader.fencing.FencingStore;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.LeaseSettings;
import dev.leader.log.LogStore;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.datasource.SimpleDriverDataSource;

/**
 * Configuration of the stores on the {@link CoordinationDataSource}: the
 * {@link CoordinationStore}, the {@link DaemonStore}, the {@link FencingStore} and the
 * {@link LogStore}, each replaceable by a bean of the application's, and the
 * {@link TablePrefix} they share. The stores are PostgreSQL's, or MariaDB's when the data
 * source leads to MariaDB ({@link JdbcDialect}), or those in memory of a node that runs
 * alone ({@link LeaderMode}); another database fails at startup with a message that says
 * what to change. Imported by {@link LeaderAutoConfiguration}, which it relies on for its
 * conditions and for the schema migration; public only for that import, not for
 * application use.
 */
@Configuration(proxyBeanMethods = false)
public final class PostgresStoresConfiguration {

	// Logged under the auto-configuration's name, where applications already look for the
	// starter's startup lines.
	private static final Log logger = LogFactory.getLog(LeaderAutoConfiguration.class);

	private @Nullable JdbcDialect dialect;

	@Bean
	@ConditionalOnMissingBean
	TablePrefix leaderTablePrefix(LeaderProperties properties) {
		return new TablePrefix(properties.getJdbc().getTablePrefix());
	}

	// The engine gives the store's connection back when it stops; the context does it
	// too, for any other caller.
	@Bean(destroyMethod = "disconnect")
	@ConditionalOnMissingBean
	CoordinationStore leaderCoordinationStore(ObjectProvider<CoordinationDataSource> coordinationDataSource,
			TablePrefix prefix, LeaderProperties properties, ObjectProvider<LeaderSchemaMigration> migration,
			LeaderMode mode) {
		if (mode.isAlone()) {
			return mode.stores().coordinationStore();
		}
		CoordinationDataSource chosen = coordinationDataSource.getObject();
		DataSource dataSource = chosen.dataSource();
		if (dialect(chosen) == JdbcDialect.MARIADB) {
			MariaDbCoordinationStore store = new MariaDbCoordinationStore(dataSource, prefix,
					properties.getJdbc().determineQueryTimeout(), properties.getJdbc().getNotifications().isEnabled());
			store.crashTakeover(properties.getLease().getCrashTakeoverGroups(), properties.getDaemons().getGroup());
			requireWritablePrimaryUnlessMigrated(store::requireWritablePrimary, migration);
			return store;
		}
		PostgresCoordinationStore store = new PostgresCoordinationStore(dataSource, prefix,
				properties.getJdbc().determineQueryTimeout(),
				notifications(properties.getJdbc().getNotifications(), chosen));
		store.crashTakeover(properties.getLease().getCrashTakeoverGroups(), properties.getDaemons().getGroup());
		requireWritablePrimaryUnlessMigrated(store::requireWritablePrimary, migration);
		return store;
	}

	// The migration checks the database before it runs; without it, the store does. A
	// database that does not answer yet only delays leadership.
	private static void requireWritablePrimaryUnlessMigrated(Runnable requireWritablePrimary,
			ObjectProvider<LeaderSchemaMigration> migration) {
		if (migration.getIfAvailable() != null) {
			return;
		}
		try {
			requireWritablePrimary.run();
		}
		catch (DataAccessException ex) {
			logger.warn("Could not check that the DataSource leads to a writable primary; leadership starts "
					+ "once the database answers: " + ex.getMessage());
		}
	}

	// Told once, from one connection, so that every store speaks the same dialect even if
	// the database comes up while they are built.
	private synchronized JdbcDialect dialect(CoordinationDataSource dataSource) {
		if (this.dialect == null) {
			this.dialect = JdbcDialect.of(dataSource.dataSource(), dataSource.url());
		}
		return this.dialect;
	}

	private static Notifications notifications(LeaderProperties.Jdbc.Notifications notifications,
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

	@Bean
	@ConditionalOnMissingBean
	@ConditionalOnBooleanProperty(name = "leader.daemons.enabled", matchIfMissing = true)
	DaemonStore leaderDaemonStore(ObjectProvider<CoordinationDataSource> coordinationDataSource, TablePrefix prefix,
			LeaderProperties properties, LeaseSettings settings, ObjectProvider<CoordinationStore> coordinationStore,
			LeaderMode mode) {
		if (mode.isAlone()) {
			return mode.stores().daemonStore();
		}
		CoordinationDataSource chosen = coordinationDataSource.getObject();
		DataSource dataSource = chosen.dataSource();
		if (dialect(chosen) == JdbcDialect.MARIADB) {
			// The heartbeat reads the assignments when the coordination store is ours,
			// and rings nodes when they change where it binds nodes to their sessions.
			MariaDbCoordinationStore coordination = (coordinationStore
				.getIfAvailable() instanceof MariaDbCoordinationStore mariaDb) ? mariaDb : null;
			return new MariaDbDaemonStore(dataSource, prefix, properties.getJdbc().determineQueryTimeout(),
					settings.nodeExpiry().minus(settings.safetyMargin()), coordination);
		}
		// Assignment notifications share the coordination store's listening connection
		// when it is ours.
		PostgresCoordinationStore notifications = (coordinationStore
			.getIfAvailable() instanceof PostgresCoordinationStore postgres) ? postgres : null;
		// A guarded daemon transaction ends before its node can be declared dead and the
		// daemon reclaimed.
		return new PostgresDaemonStore(dataSource, prefix, properties.getJdbc().determineQueryTimeout(),
				settings.nodeExpiry().minus(settings.safetyMargin()), notifications);
	}

	@Bean
	@ConditionalOnMissingBean
	LogStore leaderLogStore(ObjectProvider<CoordinationDataSource> coordinationDataSource, TablePrefix prefix,
			LeaderProperties properties, LeaseSettings settings, ObjectProvider<CoordinationStore> coordinationStore,
			LeaderMode mode) {
		if (mode.isAlone()) {
			return mode.stores().logStore();
		}
		CoordinationDataSource chosen = coordinationDataSource.getObject();
		DataSource dataSource = chosen.dataSource();
		// The coordination store's heartbeat reads the logs' last indexes, and on
		// PostgreSQL its listening connection follows the append notifications, when it
		// is ours; an append holds the lease as a guard does.
		if (dialect(chosen) == JdbcDialect.MARIADB) {
			MariaDbCoordinationStore heartbeat = (coordinationStore
				.getIfAvailable() instanceof MariaDbCoordinationStore mariaDb) ? mariaDb : null;
			return new MariaDbLogStore(dataSource, prefix, properties.getJdbc().determineQueryTimeout(),
					settings.safeWindow(), heartbeat);
		}
		PostgresCoordinationStore notifications = (coordinationStore
			.getIfAvailable() instanceof PostgresCoordinationStore postgres) ? postgres : null;
		return new PostgresLogStore(dataSource, prefix, properties.getJdbc().determineQueryTimeout(),
				settings.safeWindow(), notifications);
	}

	@Bean
	@ConditionalOnMissingBean
	FencingStore leaderFencingStore(ObjectProvider<CoordinationDataSource> coordinationDataSource, TablePrefix prefix,
			LeaderProperties properties, LeaseSettings settings, ObjectProvider<CoordinationStore> coordinationStore,
			LeaderMode mode) {
		if (mode.isAlone()) {
			return mode.stores().fencingStore();
		}
		CoordinationDataSource chosen = coordinationDataSource.getObject();
		DataSource dataSource = chosen.dataSource();
		// A guarded transaction cannot usefully outlast the holder's own belief in its
		// leadership.
		if (dialect(chosen) == JdbcDialect.MARIADB) {
			// The guard learns the expiry of the node's terms from the coordination
			// store's grants and renewals, when it is ours.
			MariaDbCoordinationStore leases = (coordinationStore
				.getIfAvailable() instanceof MariaDbCoordinationStore mariaDb) ? mariaDb : null;
			return new MariaDbFencingStore(dataSource, prefix, properties.getJdbc().determineQueryTimeout(),
					settings.safeWindow(), leases);
		}
		return new PostgresFencingStore(dataSource, prefix, properties.getJdbc().determineQueryTimeout(),
				settings.safeWindow());
	}

}
