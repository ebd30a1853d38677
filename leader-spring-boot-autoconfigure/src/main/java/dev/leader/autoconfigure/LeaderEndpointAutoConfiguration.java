package dev.leader.autoconfigure;

import dev.leader.Leadership;
import dev.leader.actuate.DecisionLogHealthIndicator;
import dev.leader.actuate.LeadershipEndpoint;
import dev.leader.actuate.LeadershipEndpointWebExtension;
import dev.leader.actuate.LeadershipHealthIndicator;
import dev.leader.alone.LeaderMode;
import dev.leader.daemon.DaemonCoordinator;
import dev.leader.daemon.DaemonStatus;
import dev.leader.lease.LeaseStatus;
import dev.leader.log.DecisionLog;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.actuate.autoconfigure.endpoint.expose.EndpointExposure;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Auto-configuration of the {@code leadership} actuator endpoint, its web extension and
 * the health indicator.
 */
@AutoConfiguration(after = LeaderAutoConfiguration.class)
@ConditionalOnBean({ Leadership.class, LeaseStatus.class })
public final class LeaderEndpointAutoConfiguration {

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(Endpoint.class)
	@ConditionalOnAvailableEndpoint(LeadershipEndpoint.class)
	static class EndpointConfiguration {

		@Bean
		@ConditionalOnMissingBean
		LeadershipEndpoint leadershipEndpoint(Leadership leadership, LeaseStatus status,
				ObjectProvider<DaemonCoordinator> daemons, ObjectProvider<DecisionLog> log,
				ObjectProvider<LeaderMode> mode) {
			DaemonCoordinator coordinator = daemons.getIfAvailable();
			LeaderMode leaderMode = mode.getIfAvailable();
			return new LeadershipEndpoint(leadership, status, coordinator, coordinator, log.getIfAvailable(),
					(leaderMode != null) ? leaderMode.name() : "cluster",
					(leaderMode != null) ? leaderMode.reason() : null);
		}

		@Bean
		@ConditionalOnMissingBean
		@ConditionalOnBean(LeadershipEndpoint.class)
		@ConditionalOnAvailableEndpoint(exposure = EndpointExposure.WEB)
		LeadershipEndpointWebExtension leadershipEndpointWebExtension(LeadershipEndpoint endpoint) {
			return new LeadershipEndpointWebExtension(endpoint);
		}

	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(HealthIndicator.class)
	@ConditionalOnEnabledHealthIndicator("leadership")
	static class HealthConfiguration {

		@Bean
		@ConditionalOnMissingBean(name = "leadershipHealthIndicator")
		LeadershipHealthIndicator leadershipHealthIndicator(LeaseStatus status, ObjectProvider<DaemonStatus> daemons) {
			return new LeadershipHealthIndicator(status, daemons.getIfAvailable());
		}

		@Bean
		@ConditionalOnMissingBean(name = "decisionLogHealthIndicator")
		@ConditionalOnBean(DecisionLog.class)
		@ConditionalOnEnabledHealthIndicator("decision-log")
		DecisionLogHealthIndicator decisionLogHealthIndicator(DecisionLog log) {
			return new DecisionLogHealthIndicator(log);
		}

	}

}
