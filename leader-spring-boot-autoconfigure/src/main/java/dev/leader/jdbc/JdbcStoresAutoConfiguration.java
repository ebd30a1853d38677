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
import org.flywaydb.core.Flyway;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.AnyNestedCondition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceProperties;
import org.springframework.boot.sql.init.dependency.DatabaseInitializationDependencyConfigurer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.Lazy;
import org.springframework.core.env.Environment;

/**
 * Auto-configuration of the stores on the application's {@link DataSource}, or of those
 * in memory of a node that runs alone ({@link LeaderMode}): the
 * {@link CoordinationStore}, the {@link DaemonStore}, the {@link FencingStore} and the
 * {@link LogStore}, each replaceable by a bean of the application's, the
 * {@link TablePrefix} they share, and the schema migration. The data source is the
 * {@link LeaderDataSource @LeaderDataSource} bean if there is one, else the application's
 * only or primary one; an application with several and neither fails at startup, saying
 * which to mark. The stores are built by the {@link JdbcStoreFamily} bean of the
 * database's {@link JdbcDialect}, told once from the data source; each engine's family is
 * defined by the engine's own auto-configuration, which runs before this one. A database
 * without a family fails at startup with a message that says what to change. Runs before
 * {@link LeaderAutoConfiguration}, which builds the engine on whatever stores there are,
 * and never refers to this class.
 * <p>
 * When another engine's coordination store is defined before this class (etcd's, or the
 * application's own), the node coordinates through it whatever the data source: there is
 * no {@link LeaderMode}, so an in-memory database never makes it run alone, and the data
 * source keeps only the fences; one the starter has no tables for (H2, HSQLDB, Derby,
 * ...) costs the fences alone, with a WARN at startup ({@link NoFencesFencingStore}).
 */
@AutoConfiguration(before = LeaderAutoConfiguration.class, after = DataSourceAutoConfiguration.class,
		afterName = "org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration")
@ConditionalOnClass(DataSource.class)
@ConditionalOnBean(DataSource.class)
@EnableConfigurationProperties(LeaderProperties.class)
@Import(DatabaseInitializationDependencyConfigurer.class)
public final class JdbcStoresAutoConfiguration {

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
			ObjectProvider<JdbcStoreFamily> families, ObjectProvider<LeaderMode> mode) {
		LeaderMode alone = alone(mode);
		if (alone != null) {
			return alone.stores().coordinationStore();
		}
		JdbcStoreContext context = context(coordinationDataSource, prefix, properties, migration);
		return family(context, families).coordinationStore(context);
	}

	@Bean
	@ConditionalOnMissingBean
	@ConditionalOnBooleanProperty(name = "leader.daemons.enabled", matchIfMissing = true)
	DaemonStore leaderDaemonStore(ObjectProvider<CoordinationDataSource> coordinationDataSource, TablePrefix prefix,
			LeaderProperties properties, LeaseSettings settings, ObjectProvider<CoordinationStore> coordinationStore,
			ObjectProvider<LeaderSchemaMigration> migration, ObjectProvider<JdbcStoreFamily> families,
			ObjectProvider<LeaderMode> mode) {
		LeaderMode alone = alone(mode);
		if (alone != null) {
			return alone.stores().daemonStore();
		}
		JdbcStoreContext context = context(coordinationDataSource, prefix, properties, migration);
		return family(context, families).daemonStore(context, settings, coordinationStore.getIfAvailable());
	}

	@Bean
	@ConditionalOnMissingBean
	LogStore leaderLogStore(ObjectProvider<CoordinationDataSource> coordinationDataSource, TablePrefix prefix,
			LeaderProperties properties, LeaseSettings settings, ObjectProvider<CoordinationStore> coordinationStore,
			ObjectProvider<LeaderSchemaMigration> migration, ObjectProvider<JdbcStoreFamily> families,
			ObjectProvider<LeaderMode> mode) {
		LeaderMode alone = alone(mode);
		if (alone != null) {
			return alone.stores().logStore();
		}
		JdbcStoreContext context = context(coordinationDataSource, prefix, properties, migration);
		return family(context, families).logStore(context, settings, coordinationStore.getIfAvailable());
	}

	@Bean
	@ConditionalOnMissingBean
	FencingStore leaderFencingStore(ObjectProvider<CoordinationDataSource> coordinationDataSource, TablePrefix prefix,
			LeaderProperties properties, LeaseSettings settings, ObjectProvider<CoordinationStore> coordinationStore,
			ObjectProvider<LeaderSchemaMigration> migration, ObjectProvider<JdbcStoreFamily> families,
			ObjectProvider<LeaderMode> mode) {
		LeaderMode alone = alone(mode);
		if (alone != null) {
			return alone.stores().fencingStore();
		}
		JdbcStoreContext context = context(coordinationDataSource, prefix, properties, migration);
		if (mode.getIfAvailable() == null) {
			// Another engine keeps the leases: the database holds only the fences, and
			// one the starter has no tables for costs the fences, not the application.
			try {
				return family(context, families).fencingStore(context, settings, coordinationStore.getIfAvailable());
			}
			catch (UnsupportedDatabaseException ex) {
				return NoFencesFencingStore.warn(context.coordinationDataSource());
			}
		}
		return family(context, families).fencingStore(context, settings, coordinationStore.getIfAvailable());
	}

	// The mode of a node that runs alone, or null if it coordinates: through its
	// database, or through another engine, which leaves no mode to decide.
	private static @Nullable LeaderMode alone(ObjectProvider<LeaderMode> mode) {
		LeaderMode decided = mode.getIfAvailable();
		return (decided != null && decided.isAlone()) ? decided : null;
	}

	private static JdbcStoreContext context(ObjectProvider<CoordinationDataSource> coordinationDataSource,
			TablePrefix prefix, LeaderProperties properties, ObjectProvider<LeaderSchemaMigration> migration) {
		return new JdbcStoreContext(coordinationDataSource.getObject(), prefix, properties,
				migration.getIfAvailable() != null);
	}

	// The family of the database's dialect, told once, from one connection, so that
	// every store speaks the same dialect even if the database comes up while they are
	// built.
	private JdbcStoreFamily family(JdbcStoreContext context, ObjectProvider<JdbcStoreFamily> families) {
		return JdbcStoreFamilies.of(dialect(context.coordinationDataSource()), families.orderedStream().toList());
	}

	private synchronized JdbcDialect dialect(CoordinationDataSource dataSource) {
		if (this.dialect == null) {
			this.dialect = JdbcDialect.of(dataSource.dataSource(), dataSource.url());
		}
		return this.dialect;
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
				ObjectProvider<DaemonSettings> daemonSettings, ObjectProvider<JdbcStoreFamily> families,
				ListableBeanFactory beanFactory, ObjectProvider<LeaderMode> mode) {
			// The settings are checked before anything is written to the database.
			checkSettings(properties, environment, settings, daemonSettings.getIfAvailable(), beanFactory);
			LeaderSchemaMigration migration = new LeaderSchemaMigration(() -> dataSource.getObject().dataSource(),
					prefix, () -> JdbcStoreFamilies.beansOrListed(families.orderedStream().toList()));
			LeaderMode decided = mode.getIfAvailable();
			if (decided == null) {
				// Another engine keeps the leases: the tables are only for the fences,
				// which a database without them goes without (NoFencesFencingStore).
				try {
					migration.migrate();
				}
				catch (UnsupportedDatabaseException ex) {
					// No table.
				}
			}
			// A node that runs alone keeps its state in memory: no table.
			else if (!decided.isAlone()) {
				migration.migrate();
			}
			return migration;
		}

	}

	/**
	 * Decides whether the node runs alone, when no other engine keeps its leases: on
	 * another engine's coordination store (etcd, or the application's own), the node
	 * coordinates through it whatever the data source, and there is no mode.
	 */
	@Configuration(proxyBeanMethods = false)
	@Conditional(NoOtherEngineCondition.class)
	static class LeaderModeConfiguration {

		/**
		 * Decides at startup, not at build time, whether this node coordinates through
		 * the database or runs alone: {@code leader.enabled=false} and an in-memory
		 * embedded database make it run alone, on stores in memory.
		 * @param properties the starter's properties
		 * @param dataSource the data source the starter keeps its tables in, asked only
		 * when enabled
		 * @return the mode
		 */
		@Bean
		@ConditionalOnMissingBean
		LeaderMode leaderMode(LeaderProperties properties, ObjectProvider<CoordinationDataSource> dataSource) {
			if (!properties.isEnabled()) {
				return LeaderMode.decide(false, null, null, properties.getJdbc().determineQueryTimeout());
			}
			CoordinationDataSource chosen = dataSource.getObject();
			return LeaderMode.decide(true, chosen.dataSource(), chosen.url(),
					properties.getJdbc().determineQueryTimeout());
		}

	}

	/**
	 * Matches when the coordination store will be this family's: no other is defined
	 * before this auto-configuration's own (the class's nested configurations are read
	 * before its beans), or the starter is off, which runs the node alone whatever it
	 * has.
	 */
	static final class NoOtherEngineCondition extends AnyNestedCondition {

		NoOtherEngineCondition() {
			super(ConfigurationPhase.REGISTER_BEAN);
		}

		@ConditionalOnMissingBean(CoordinationStore.class)
		static final class NoOtherCoordinationStore {

		}

		@ConditionalOnBooleanProperty(name = "leader.enabled", havingValue = false)
		static final class Disabled {

		}

	}

}
