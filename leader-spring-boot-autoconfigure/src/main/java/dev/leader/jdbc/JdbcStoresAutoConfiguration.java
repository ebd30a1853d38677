package dev.leader.jdbc;

import javax.sql.DataSource;

import dev.leader.DaemonAgent;
import dev.leader.LeaderDataSource;
import dev.leader.alone.LeaderMode;
import dev.leader.autoconfigure.LeaderAutoConfiguration;
import dev.leader.autoconfigure.LeaderProperties;
import dev.leader.autoconfigure.NodeIdentity;
import dev.leader.daemon.DaemonSettings;
import dev.leader.daemon.DaemonStore;
import dev.leader.fencing.FencingStore;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.LeaseSettings;
import dev.leader.log.LogStore;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.flywaydb.core.Flyway;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceProperties;
import org.springframework.boot.sql.init.dependency.DatabaseInitializationDependencyConfigurer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.Lazy;
import org.springframework.core.env.Environment;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.datasource.SimpleDriverDataSource;

/**
 * Auto-configuration of the stores on the application's PostgreSQL or MariaDB
 * {@link DataSource}, or of those in memory of a node that runs alone
 * ({@link LeaderMode}): the {@link CoordinationStore}, the {@link DaemonStore}, the
 * {@link FencingStore} and the {@link LogStore}, each replaceable by a bean of the
 * application's, the {@link TablePrefix} they share, and the schema migration. The data
 * source is the {@link LeaderDataSource @LeaderDataSource} bean if there is one, else the
 * application's only or primary one; an application with several and neither fails at
 * startup, saying which to mark. The stores are PostgreSQL's, or MariaDB's when the data
 * source leads to MariaDB ({@link JdbcDialect}); another database fails at startup with a
 * message that says what to change. Runs before {@link LeaderAutoConfiguration}, which
 * builds the engine on whatever stores there are, and never refers to this class.
 */
@AutoConfiguration(before = LeaderAutoConfiguration.class, after = DataSourceAutoConfiguration.class,
		afterName = "org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration")
@ConditionalOnClass(DataSource.class)
@ConditionalOnBean(DataSource.class)
@EnableConfigurationProperties(LeaderProperties.class)
@Import(DatabaseInitializationDependencyConfigurer.class)
public final class JdbcStoresAutoConfiguration {

	// Logged under the auto-configuration's name, where applications already look for the
	// starter's startup lines.
	private static final Log logger = LogFactory.getLog(LeaderAutoConfiguration.class);

	private @Nullable JdbcDialect dialect;

	/**
	 * Chooses the data source the starter keeps its tables in. Lazy, and asked only by a
	 * node that coordinates through it, so that {@code leader.enabled=false} needs no
	 * choice.
	 * @param leaderDataSource the {@link LeaderDataSource @LeaderDataSource} bean, if any
	 * @param dataSources the application's data sources
	 * @param dataSourceProperties the properties of the data source Spring Boot builds,
	 * for its URL and user
	 * @param beanFactory the factory, to name every data source when none can be chosen
	 * @return the data source
	 * @throws CoordinationDataSourceException if the application has several data sources
	 * and none is marked for the starter or primary
	 */
	@Bean
	@Lazy
	@ConditionalOnMissingBean
	CoordinationDataSource leaderCoordinationDataSource(@LeaderDataSource ObjectProvider<DataSource> leaderDataSource,
			ObjectProvider<DataSource> dataSources, ObjectProvider<DataSourceProperties> dataSourceProperties,
			ListableBeanFactory beanFactory) {
		return CoordinationDataSources.choose(leaderDataSource.getIfAvailable(), dataSources,
				dataSourceProperties.getIfAvailable(), beanFactory);
	}

	/**
	 * Decides at startup, not at build time, whether this node coordinates through the
	 * database or runs alone: {@code leader.enabled=false} and an in-memory embedded
	 * database make it run alone, on stores in memory.
	 * @param properties the starter's properties
	 * @param dataSource the data source the starter keeps its tables in, asked only when
	 * enabled
	 * @return the mode
	 */
	@Bean
	@ConditionalOnMissingBean
	LeaderMode leaderMode(LeaderProperties properties, ObjectProvider<CoordinationDataSource> dataSource) {
		if (!properties.isEnabled()) {
			return LeaderMode.decide(false, null, null, properties.getJdbc().determineQueryTimeout());
		}
		CoordinationDataSource chosen = dataSource.getObject();
		return LeaderMode.decide(true, chosen.dataSource(), chosen.url(), properties.getJdbc().determineQueryTimeout());
	}

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

	/**
	 * Checks every setting that the beans check when they are created, for the migration
	 * to run only with valid ones: the beans that check them may be created after it.
	 * @param properties the starter's properties
	 * @param environment the environment, for the node's name
	 * @param lease the lease settings
	 * @param daemons the daemon settings, or {@code null} if there are none
	 * @param beanFactory the factory to find the {@link DaemonAgent} beans in
	 */
	private static void checkSettings(LeaderProperties properties, Environment environment, LeaseSettings lease,
			@Nullable DaemonSettings daemons, ListableBeanFactory beanFactory) {
		properties.getJdbc().determineQueryTimeout();
		properties.getLog().getRetention().determineRetention();
		NodeIdentity.check(properties, environment);
		if (daemons != null && beanFactory.getBeanNamesForType(DaemonAgent.class, true, false).length > 0) {
			daemons.requireAckTimeoutAllowsAPoll(lease);
		}
	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(Flyway.class)
	@ConditionalOnBooleanProperty(name = "leader.jdbc.migrate", matchIfMissing = true)
	static class SchemaMigrationConfiguration {

		@Bean
		@ConditionalOnMissingBean
		LeaderSchemaMigration leaderSchemaMigration(ObjectProvider<CoordinationDataSource> dataSource,
				TablePrefix prefix, LeaseSettings settings, LeaderProperties properties, Environment environment,
				ObjectProvider<DaemonSettings> daemonSettings, ListableBeanFactory beanFactory, LeaderMode mode) {
			// The settings are checked before anything is written to the database.
			checkSettings(properties, environment, settings, daemonSettings.getIfAvailable(), beanFactory);
			LeaderSchemaMigration migration = new LeaderSchemaMigration(() -> dataSource.getObject().dataSource(),
					prefix);
			// A node that runs alone keeps its state in memory: no table.
			if (!mode.isAlone()) {
				migration.migrate();
			}
			return migration;
		}

	}

}
