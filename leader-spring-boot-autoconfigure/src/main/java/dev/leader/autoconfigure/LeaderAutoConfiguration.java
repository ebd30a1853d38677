package dev.leader.autoconfigure;

import java.util.Map;
import java.util.Set;

import dev.leader.DaemonAgent;
import dev.leader.LeaderOnlyConfiguration;
import dev.leader.Leadership;
import dev.leader.alone.LeaderMode;
import dev.leader.daemon.DaemonCoordinator;
import dev.leader.daemon.DaemonSettings;
import dev.leader.daemon.DaemonStore;
import dev.leader.fencing.Fencing;
import dev.leader.fencing.FencingStore;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.Enrolment;
import dev.leader.lease.LeaderEngine;
import dev.leader.lease.LeaseSettings;
import dev.leader.lease.LeaseStatus;
import dev.leader.log.DecisionLogConfiguration;
import dev.leader.log.LogApplier;
import dev.leader.log.LogRetention;
import io.micrometer.observation.ObservationRegistry;
import org.jspecify.annotations.Nullable;

import org.springframework.aop.config.AopConfigUtils;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.ImportBeanDefinitionRegistrar;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotationMetadata;

/**
 * Auto-configuration of leader election on the stores of whichever coordination engine
 * the application has: the application's PostgreSQL or MariaDB {@code DataSource}
 * (configured before this class, in its own package), stores of the application's own, or
 * stores in memory for a node that runs alone. This class builds the engine, the daemon
 * coordinator, fencing and the decision log on them, and knows nothing of the engine
 * behind them.
 * <p>
 * Each feature whose implementation is package-private is wired from its own package: the
 * {@code @LeaderOnly} advice from {@link LeaderOnlyConfiguration}, the decision log from
 * {@link DecisionLogConfiguration}.
 */
@AutoConfiguration(afterName = {
		// Registers the fence advisor after the transaction advisor, so that it runs
		// inside the transaction.
		"org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration",
		// The engine observes its round trips on the application's registry.
		"org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration" })
@ConditionalOnBean(CoordinationStore.class)
@EnableConfigurationProperties(LeaderProperties.class)
@Import({ LeaderAutoConfiguration.ProxyCreatorRegistrar.class, LeaderOnlyConfiguration.class,
		DecisionLogConfiguration.class })
public final class LeaderAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean
	LeaseSettings leaderLeaseSettings(LeaderProperties properties) {
		LeaderProperties.Lease lease = properties.getLease();
		return new LeaseSettings(lease.getDuration(), lease.getRenewInterval(), lease.getRetryInterval(),
				lease.getSafetyMargin(), properties.getNode().getExpiry(), lease.getYieldCooldown());
	}

	@Bean
	@ConditionalOnMissingBean(Leadership.class)
	LeaderEngine leaderEngine(CoordinationStore store, LeaseSettings settings, LeaderProperties properties,
			Environment environment, ApplicationEventPublisher publisher, LeaderOnlyGroups leaderOnlyGroups,
			ObjectProvider<LogApplier> logAppliers, ObjectProvider<ObservationRegistry> observationRegistry) {
		Set<String> groups = NodeIdentity.groups(properties);
		LeaderEngine engine = new LeaderEngine(store, settings, NodeIdentity.registration(properties, environment),
				groups, publisher::publishEvent);
		leaderOnlyGroups.drainTo(engine::addGroup);
		// A node follows the logs it applies through its heartbeat, which reads the
		// logs' ends with the leases of its groups.
		logAppliers.orderedStream().forEach((applier) -> engine.addGroup(applier.group()));
		observationRegistry.ifUnique(engine::setObservationRegistry);
		return engine;
	}

	@Bean
	@ConditionalOnMissingBean
	@ConditionalOnBean(LeaderEngine.class)
	LeaderEngineLifecycle leaderEngineLifecycle(LeaderEngine engine, ObjectProvider<LeaderMode> mode) {
		LeaderMode leaderMode = mode.getIfAvailable();
		return new LeaderEngineLifecycle(engine, leaderMode != null && leaderMode.isAlone());
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
	 * The coordinator takes the engine's lifecycle as a dependency, so that the context
	 * starts it after the engine and stops it, handing its daemons over on a live node,
	 * before the engine deregisters the node. On a context's close the leases are given
	 * up before either stops, see {@link LeaderEngineLifecycle}. It depends on the node's
	 * leadership only through its three views, so that a {@link Leadership} bean of the
	 * application's that offers them too runs daemons as well.
	 * @param leadership the node's leadership, whose groups hold the daemons' leadership
	 * @param status its status
	 * @param enrolment where the daemons enrol with it
	 * @param engineLifecycle the engine's lifecycle, if the engine is the starter's, a
	 * dependency only to order the coordinator after it
	 * @param store the store of daemon assignments
	 * @param settings the daemon settings
	 * @param beanFactory the factory to find the {@link DaemonAgent} beans in
	 * @param publisher the publisher of the coordinator's events
	 * @param observationRegistry the registry for the coordinator's observations, if
	 * unique
	 * @return the coordinator
	 */
	@Bean
	@ConditionalOnMissingBean
	@ConditionalOnBean({ Leadership.class, LeaseStatus.class, Enrolment.class, DaemonStore.class,
			DaemonSettings.class })
	DaemonCoordinator leaderDaemonCoordinator(Leadership leadership, LeaseStatus status, Enrolment enrolment,
			@Nullable LeaderEngineLifecycle engineLifecycle, DaemonStore store, DaemonSettings settings,
			ListableBeanFactory beanFactory, ApplicationEventPublisher publisher,
			ObjectProvider<ObservationRegistry> observationRegistry) {
		Map<String, DaemonAgent> agents = beanFactory.getBeansOfType(DaemonAgent.class);
		DaemonCoordinator coordinator = new DaemonCoordinator(leadership, status, enrolment, store, settings,
				DaemonCoordinator.agentsByName(agents), publisher::publishEvent);
		observationRegistry.ifUnique(coordinator::setObservationRegistry);
		return coordinator;
	}

	@Bean
	@ConditionalOnMissingBean
	LogRetention leaderLogRetention(LeaderProperties properties) {
		return properties.getLog().getRetention().determineRetention();
	}

	@Bean
	@ConditionalOnMissingBean
	@ConditionalOnBean(FencingStore.class)
	Fencing leaderFencing(FencingStore store, Leadership leadership) {
		return new Fencing(store, leadership.nodeId());
	}

	@Bean
	@ConditionalOnMissingBean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static LeaderOnlyGroups leaderOnlyGroups() {
		return new LeaderOnlyGroups();
	}

	/**
	 * Makes sure an auto-proxy creator exists, so that {@code @LeaderOnly} applies even
	 * without Spring Boot's AOP auto-configuration, as
	 * {@code @EnableTransactionManagement} does. Whether proxies are class-based stays
	 * the application's choice ({@code spring.aop.proxy-target-class}, {@code true} by
	 * default).
	 */
	static final class ProxyCreatorRegistrar implements ImportBeanDefinitionRegistrar {

		@Override
		public void registerBeanDefinitions(AnnotationMetadata metadata, BeanDefinitionRegistry registry) {
			AopConfigUtils.registerAutoProxyCreatorIfNecessary(registry);
		}

	}

}
