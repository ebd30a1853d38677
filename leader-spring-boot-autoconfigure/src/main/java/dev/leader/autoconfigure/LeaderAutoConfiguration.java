package dev.leader.autoconfigure;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;

import javax.sql.DataSource;

import dev.leader.DaemonAgent;
import dev.leader.LeaderOnlyAdvisor;
import dev.leader.LeaderOnlyInterceptor;
import dev.leader.Leadership;
import dev.leader.autoconfigure.LeaderProperties.WhenNotLeader;
import dev.leader.daemon.DaemonCoordinator;
import dev.leader.daemon.DaemonSettings;
import dev.leader.daemon.DaemonStore;
import dev.leader.fencing.FencedCallAdvisor;
import dev.leader.fencing.Fencing;
import dev.leader.fencing.FencingStore;
import dev.leader.jdbc.LeaderSchemaMigration;
import dev.leader.jdbc.Notifications;
import dev.leader.jdbc.PostgresCoordinationStore;
import dev.leader.jdbc.PostgresDaemonStore;
import dev.leader.jdbc.PostgresFencingStore;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.LeaderEngine;
import dev.leader.lease.LeaseSettings;
import dev.leader.node.Names;
import dev.leader.node.NodeRegistration;
import io.micrometer.observation.ObservationRegistry;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.flywaydb.core.Flyway;
import org.jspecify.annotations.Nullable;

import org.springframework.aop.config.AopConfigUtils;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceProperties;
import org.springframework.boot.sql.init.dependency.DatabaseInitializationDependencyConfigurer;
import org.springframework.boot.sql.init.dependency.DependsOnDatabaseInitialization;
import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationContextAware;
import org.springframework.context.ApplicationEvent;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.ImportBeanDefinitionRegistrar;
import org.springframework.context.annotation.Role;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.context.event.GenericApplicationListener;
import org.springframework.core.Ordered;
import org.springframework.core.ResolvableType;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotationMetadata;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.datasource.SimpleDriverDataSource;

/**
 * Auto-configuration of leader election on the application's PostgreSQL {@link DataSource}.
 */
@AutoConfiguration(after = DataSourceAutoConfiguration.class,
		afterName = { "org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration",
				// Registers the fence advisor after the transaction advisor, so that it runs inside the transaction.
				"org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration",
				// The engine observes its round trips on the application's registry.
				"org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration" })
@ConditionalOnBooleanProperty(name = "leader.enabled", matchIfMissing = true)
@ConditionalOnClass({ DataSource.class, org.postgresql.Driver.class })
@ConditionalOnSingleCandidate(DataSource.class)
@EnableConfigurationProperties(LeaderProperties.class)
@Import({ DatabaseInitializationDependencyConfigurer.class, LeaderAutoConfiguration.ProxyCreatorRegistrar.class })
public final class LeaderAutoConfiguration {

	private static final Log logger = LogFactory.getLog(LeaderAutoConfiguration.class);

	// Twice this, the network timeout, in milliseconds, still fits an int.
	private static final Duration MAX_QUERY_TIMEOUT = Duration.ofDays(12);

	@Bean
	@ConditionalOnMissingBean
	TablePrefix leaderTablePrefix(LeaderProperties properties) {
		return new TablePrefix(properties.getJdbc().getTablePrefix());
	}

	@Bean
	@ConditionalOnMissingBean
	LeaseSettings leaderLeaseSettings(LeaderProperties properties) {
		LeaderProperties.Lease lease = properties.getLease();
		return new LeaseSettings(lease.getDuration(), lease.getRenewInterval(), lease.getRetryInterval(),
				lease.getSafetyMargin(), properties.getNode().getExpiry(), lease.getYieldCooldown());
	}

	// The engine gives the store's connection back when it stops; the context does it too, for any other caller.
	@Bean(destroyMethod = "disconnect")
	@ConditionalOnMissingBean
	CoordinationStore leaderCoordinationStore(DataSource dataSource, TablePrefix prefix, LeaderProperties properties,
			ObjectProvider<LeaderSchemaMigration> migration,
			ObjectProvider<DataSourceProperties> dataSourceProperties) {
		PostgresCoordinationStore store = new PostgresCoordinationStore(dataSource, prefix, queryTimeout(properties),
				notifications(properties.getJdbc().getNotifications(), dataSourceProperties.getIfAvailable()));
		if (migration.getIfAvailable() == null) {
			// The migration checks the database before it runs; without it, the store does.
			try {
				store.requireWritablePrimary();
			}
			catch (DataAccessException ex) {
				logger.warn("Could not check that the DataSource leads to a writable primary; leadership starts "
						+ "once the database answers: " + ex.getMessage());
			}
		}
		return store;
	}

	private static Notifications notifications(LeaderProperties.Jdbc.Notifications notifications,
			@Nullable DataSourceProperties dataSource) {
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
		if (username == null && dataSource != null) {
			username = dataSource.getUsername();
		}
		if (password == null && dataSource != null) {
			password = dataSource.getPassword();
		}
		return Notifications.direct(new SimpleDriverDataSource(new org.postgresql.Driver(), url, username, password));
	}

	@Bean
	@ConditionalOnMissingBean(Leadership.class)
	LeaderEngine leaderEngine(CoordinationStore store, LeaseSettings settings, LeaderProperties properties,
			Environment environment, ApplicationEventPublisher publisher, LeaderOnlyGroups leaderOnlyGroups,
			ObjectProvider<ObservationRegistry> observationRegistry) {
		Set<String> groups = groups(properties);
		String name = nodeName(properties, environment);
		String host = hostName();
		String configuredId = configuredId(properties);
		String id = (configuredId != null) ? configuredId : generatedId(host);
		LeaderEngine engine = new LeaderEngine(store, settings,
				new NodeRegistration(id, name, host, ProcessHandle.current().pid()), groups,
				publisher::publishEvent);
		leaderOnlyGroups.drainTo(engine::addGroup);
		observationRegistry.ifUnique(engine::setObservationRegistry);
		return engine;
	}

	@Bean
	@ConditionalOnMissingBean
	@ConditionalOnBean(LeaderEngine.class)
	LeaderEngineLifecycle leaderEngineLifecycle(LeaderEngine engine) {
		return new LeaderEngineLifecycle(engine);
	}

	@Bean
	@ConditionalOnMissingBean
	@ConditionalOnBooleanProperty(name = "leader.daemons.enabled", matchIfMissing = true)
	DaemonStore leaderDaemonStore(DataSource dataSource, TablePrefix prefix, LeaderProperties properties,
			LeaseSettings settings, ObjectProvider<LeaderSchemaMigration> migration,
			ObjectProvider<CoordinationStore> coordinationStore) {
		migration.ifAvailable((available) -> { /* created, so the tables exist */ });
		// Assignment notifications share the coordination store's listening connection when it is ours.
		PostgresCoordinationStore notifications = (coordinationStore
			.getIfAvailable() instanceof PostgresCoordinationStore postgres) ? postgres : null;
		// A guarded daemon transaction ends before its node can be declared dead and the daemon reclaimed.
		return new PostgresDaemonStore(dataSource, prefix, queryTimeout(properties),
				settings.nodeExpiry().minus(settings.safetyMargin()), notifications);
	}

	@Bean
	@ConditionalOnMissingBean
	@ConditionalOnBooleanProperty(name = "leader.daemons.enabled", matchIfMissing = true)
	DaemonSettings leaderDaemonSettings(LeaderProperties properties) {
		LeaderProperties.Daemons daemons = properties.getDaemons();
		return new DaemonSettings(daemons.getGroup(), daemons.getAckTimeout(), daemons.getDrainTimeout(),
				daemons.getMaxMovesPerCycle(), daemons.getSettleWindow());
	}

	/**
	 * The coordinator takes the engine's lifecycle as a dependency, so that the context starts it after the engine
	 * and stops it, handing its daemons over, before the engine releases the leases and deregisters the node.
	 */
	@Bean
	@ConditionalOnMissingBean
	@ConditionalOnBean({ LeaderEngine.class, DaemonStore.class, DaemonSettings.class })
	DaemonCoordinator leaderDaemonCoordinator(LeaderEngine engine, LeaderEngineLifecycle engineLifecycle,
			DaemonStore store, DaemonSettings settings, ListableBeanFactory beanFactory,
			ApplicationEventPublisher publisher, ObjectProvider<ObservationRegistry> observationRegistry) {
		Map<String, DaemonAgent> agents = beanFactory.getBeansOfType(DaemonAgent.class);
		DaemonCoordinator coordinator = new DaemonCoordinator(engine, store, settings,
				DaemonCoordinator.agentsByName(agents), publisher::publishEvent);
		observationRegistry.ifUnique(coordinator::setObservationRegistry);
		return coordinator;
	}

	@Bean
	@ConditionalOnMissingBean
	FencingStore leaderFencingStore(DataSource dataSource, TablePrefix prefix, LeaderProperties properties,
			LeaseSettings settings) {
		// A guarded transaction cannot usefully outlast the holder's own belief in its leadership.
		return new PostgresFencingStore(dataSource, prefix, queryTimeout(properties), settings.safeWindow());
	}

	@Bean
	@ConditionalOnMissingBean
	Fencing leaderFencing(FencingStore store, Leadership leadership) {
		return new Fencing(store, leadership.nodeId());
	}

	@Bean
	@ConditionalOnMissingBean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static FencedCallAdvisor leaderFencedCallAdvisor(ObjectProvider<Fencing> fencing) {
		return new FencedCallAdvisor(fencing::getObject);
	}

	@Bean
	@ConditionalOnMissingBean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static LeaderOnlyGroups leaderOnlyGroups() {
		return new LeaderOnlyGroups();
	}

	@Bean
	@ConditionalOnMissingBean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static LeaderOnlyAdvisor leaderOnlyAdvisor(ObjectProvider<Leadership> leadership, Environment environment) {
		// Bound directly: the advisor is created while post-processors register, too early for the properties bean.
		LeaderProperties.LeaderOnly leaderOnly = Binder.get(environment)
			.bindOrCreate("leader.leader-only", LeaderProperties.LeaderOnly.class);
		return new LeaderOnlyAdvisor(new LeaderOnlyInterceptor(new LazyLeadership(leadership),
				leaderOnly.getWhenNotLeader() == WhenNotLeader.THROW, leaderOnly.isInterruptOnRevoke()));
	}

	private static String requireValidName(String property, String what, String name) {
		try {
			return Names.requireValid(what, name);
		}
		catch (IllegalArgumentException ex) {
			// Not chained, so that the root cause of the startup failure names the property to change.
			throw new IllegalArgumentException(property + ": " + ex.getMessage());
		}
	}

	private static Set<String> groups(LeaderProperties properties) {
		Set<String> groups = new LinkedHashSet<>();
		properties.getGroups().forEach((group) -> groups.add(requireValidName("leader.groups", "group name", group)));
		return groups;
	}

	private static @Nullable String configuredId(LeaderProperties properties) {
		String id = properties.getNode().getId();
		return (id != null) ? requireValidName("leader.node.id", "node id", id) : null;
	}

	private static String nodeName(LeaderProperties properties, Environment environment) {
		String configured = properties.getNode().getName();
		String name = (configured != null) ? configured
				: environment.getProperty("spring.application.name", "application");
		try {
			return Names.requireValidNodeName(name);
		}
		catch (IllegalArgumentException ex) {
			throw new IllegalArgumentException((configured != null) ? "leader.node.name: " + ex.getMessage()
					: "spring.application.name, the default of leader.node.name: " + ex.getMessage()
							+ "; or set leader.node.name");
		}
	}

	private static Duration queryTimeout(LeaderProperties properties) {
		Duration queryTimeout = properties.getJdbc().getQueryTimeout();
		if (queryTimeout == null || queryTimeout.isZero() || queryTimeout.isNegative()) {
			throw new IllegalArgumentException("leader.jdbc.query-timeout must be positive, was " + queryTimeout);
		}
		if (queryTimeout.compareTo(MAX_QUERY_TIMEOUT) > 0) {
			throw new IllegalArgumentException("leader.jdbc.query-timeout must be at most 12 days (PT288H), was "
					+ queryTimeout + ": the connection's network timeout, twice the query timeout, is an int of "
					+ "milliseconds, which ends at 24.8 days");
		}
		return queryTimeout;
	}

	/**
	 * Checks every setting that the beans check when they are created, for the migration to run only with valid
	 * ones: the beans that check them may be created after it.
	 */
	private static void checkSettings(LeaderProperties properties, Environment environment, LeaseSettings lease,
			@Nullable DaemonSettings daemons, ListableBeanFactory beanFactory) {
		queryTimeout(properties);
		groups(properties);
		configuredId(properties);
		nodeName(properties, environment);
		if (daemons != null && beanFactory.getBeanNamesForType(DaemonAgent.class, true, false).length > 0) {
			daemons.requireAckTimeoutAllowsAPoll(lease);
		}
	}

	private static String hostName() {
		try {
			return InetAddress.getLocalHost().getHostName();
		}
		catch (UnknownHostException ex) {
			return "localhost";
		}
	}

	private static String generatedId(String host) {
		String readable = host.replaceAll("[^A-Za-z0-9._-]", "-");
		if (readable.isEmpty() || !Character.isLetterOrDigit(readable.charAt(0))) {
			readable = "node" + readable;
		}
		readable = readable.substring(0, Math.min(readable.length(), 100));
		return readable + "-" + Long.toHexString(ThreadLocalRandom.current().nextLong(0x1000000L, 0x10000000L));
	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(Flyway.class)
	@ConditionalOnBooleanProperty(name = "leader.jdbc.migrate", matchIfMissing = true)
	static class SchemaMigrationConfiguration {

		@Bean
		@ConditionalOnMissingBean
		@DependsOnDatabaseInitialization
		LeaderSchemaMigration leaderSchemaMigration(DataSource dataSource, TablePrefix prefix, LeaseSettings settings,
				LeaderProperties properties, Environment environment, ObjectProvider<DaemonSettings> daemonSettings,
				ListableBeanFactory beanFactory) {
			// The settings are checked before anything is written to the database.
			checkSettings(properties, environment, settings, daemonSettings.getIfAvailable(), beanFactory);
			LeaderSchemaMigration migration = new LeaderSchemaMigration(dataSource, prefix);
			migration.migrate();
			return migration;
		}

	}

	/**
	 * Starts the engine after the context is refreshed, and stops it, releasing the leases, as early during shutdown
	 * as the revoked events can still reach their listeners: on a signal, in a JVM shutdown hook of its own, which
	 * starts with the application's hook rather than after it, and otherwise when the context publishes its
	 * {@link ContextClosedEvent}, before any lifecycle phase stops; the context waits there until the release is
	 * done, so that the revoked events reach an active context. Either comes before the daemon coordinator drains
	 * the daemons in the first lifecycle phase, which takes as long as the slowest agent takes to return: the daemons'
	 * assignments are fenced by their generation, so the next leader can plan at once while they drain. A context
	 * that is only stopped, not closed, stops the engine in the first lifecycle phase, after the coordinator.
	 */
	static final class LeaderEngineLifecycle implements SmartLifecycle, GenericApplicationListener,
			ApplicationContextAware {

		private final LeaderEngine engine;

		private final Object lock = new Object();

		private @Nullable ApplicationContext context;

		private @Nullable CompletableFuture<Void> stopping;

		private @Nullable Thread shutdownHook;

		LeaderEngineLifecycle(LeaderEngine engine) {
			this.engine = engine;
		}

		@Override
		public void setApplicationContext(ApplicationContext context) {
			this.context = context;
		}

		@Override
		public boolean supportsEventType(ResolvableType eventType) {
			return ContextClosedEvent.class.isAssignableFrom(eventType.toClass());
		}

		@Override
		public void onApplicationEvent(ApplicationEvent event) {
			// A child context's closed event reaches this context's listeners too.
			if (event instanceof ContextClosedEvent closed && closed.getApplicationContext() == this.context) {
				stopOnce();
				removeShutdownHook();
			}
		}

		@Override
		public int getOrder() {
			return Ordered.HIGHEST_PRECEDENCE;
		}

		@Override
		public void start() {
			synchronized (this.lock) {
				this.stopping = null;
			}
			this.engine.start();
			Thread hook = new Thread(this::stopOnce, "leader-shutdown");
			try {
				Runtime.getRuntime().addShutdownHook(hook);
				synchronized (this.lock) {
					this.shutdownHook = hook;
				}
			}
			catch (IllegalStateException ex) {
				// The JVM is shutting down already; the context's close stops the engine.
			}
		}

		@Override
		public void stop() {
			stopOnce();
			removeShutdownHook();
		}

		/**
		 * Stops the engine once, whichever thread asks first; the others wait until it is stopped.
		 */
		private void stopOnce() {
			CompletableFuture<Void> stopped;
			boolean first = false;
			synchronized (this.lock) {
				if (this.stopping == null) {
					this.stopping = new CompletableFuture<>();
					first = true;
				}
				stopped = this.stopping;
			}
			if (first) {
				try {
					this.engine.stop();
				}
				finally {
					stopped.complete(null);
				}
			}
			else {
				stopped.join();
			}
		}

		private void removeShutdownHook() {
			Thread hook;
			synchronized (this.lock) {
				hook = this.shutdownHook;
				this.shutdownHook = null;
			}
			if (hook != null && hook != Thread.currentThread()) {
				try {
					Runtime.getRuntime().removeShutdownHook(hook);
				}
				catch (IllegalStateException ex) {
					// The JVM is shutting down: the hook runs, or ran, and stops nothing twice.
				}
			}
		}

		@Override
		public boolean isRunning() {
			return this.engine.isRunning();
		}

	}

	/**
	 * Lets the advisor, an infrastructure bean created early, reach the leadership bean only when first used.
	 */
	private record LazyLeadership(ObjectProvider<Leadership> provider) implements Leadership {

		@Override
		public String nodeId() {
			return this.provider.getObject().nodeId();
		}

		@Override
		public Set<String> groups() {
			return this.provider.getObject().groups();
		}

		@Override
		public boolean isLeader(String group) {
			return this.provider.getObject().isLeader(group);
		}

		@Override
		public java.util.Optional<dev.leader.FencingToken> token(String group) {
			return this.provider.getObject().token(group);
		}

		@Override
		public java.util.Optional<dev.leader.LeaderInfo> leader(String group) {
			return this.provider.getObject().leader(group);
		}

		@Override
		public boolean yield(String group) {
			return this.provider.getObject().yield(group);
		}

		@Override
		public boolean awaitLeadership(String group, Duration timeout) throws InterruptedException {
			return this.provider.getObject().awaitLeadership(group, timeout);
		}

		@Override
		public Registration addListener(String group, LeadershipListener listener) {
			return this.provider.getObject().addListener(group, listener);
		}

	}

	/**
	 * Makes sure an auto-proxy creator exists, with class-based proxies, so that {@code @LeaderOnly} applies even
	 * without spring-aop's AspectJ support; the application's own proxy configuration wins when it has one.
	 */
	static final class ProxyCreatorRegistrar implements ImportBeanDefinitionRegistrar {

		@Override
		public void registerBeanDefinitions(AnnotationMetadata metadata, BeanDefinitionRegistry registry) {
			AopConfigUtils.registerAutoProxyCreatorIfNecessary(registry);
			AopConfigUtils.forceAutoProxyCreatorToUseClassProxying(registry);
		}

	}

}
