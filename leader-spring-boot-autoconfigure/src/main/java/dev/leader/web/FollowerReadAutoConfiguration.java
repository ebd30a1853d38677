package dev.leader.web;

import dev.leader.Leadership;
import dev.leader.autoconfigure.LeaderAutoConfiguration;
import dev.leader.autoconfigure.LeaderProperties;
import dev.leader.lease.Enrolment;
import dev.leader.lease.LeaseStatus;
import dev.leader.log.DecisionLog;

import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;
import org.springframework.web.servlet.DispatcherServlet;
import org.springframework.web.servlet.config.annotation.InterceptorRegistry;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;

/**
 * Auto-configuration of {@link FollowerRead} and {@link ForwardToLeader} handlers, of the
 * base URL a node advertises, and of a {@link NearestNodeRouter} for the application's
 * clients, in a servlet web application with Spring MVC.
 */
@AutoConfiguration(after = LeaderAutoConfiguration.class,
		afterName = "org.springframework.boot.webmvc.autoconfigure.WebMvcAutoConfiguration")
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnClass({ DispatcherServlet.class, WebMvcConfigurer.class })
@ConditionalOnBean({ Leadership.class, LeaseStatus.class, Enrolment.class })
public final class FollowerReadAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean
	NodeAddressAdvertiser leaderNodeAddressAdvertiser(Enrolment enrolment, Leadership leadership,
			LeaderProperties properties, Environment environment) {
		return new NodeAddressAdvertiser(enrolment, leadership.nodeId(), environment,
				properties.getNode().getBaseUrl() != null, properties.getNode().getZone());
	}

	@Bean
	@ConditionalOnMissingBean
	NearestNodeRouter leaderNearestNodeRouter(LeaseStatus status, LeaderProperties properties) {
		return new NearestNodeRouter(status::members, properties.getNode().getZone());
	}

	@Bean
	@ConditionalOnMissingBean
	FollowerReadSettings leaderFollowerReadSettings(LeaderProperties properties) {
		LeaderProperties.FollowerReads reads = properties.getFollowerReads();
		ReadConsistency defaultConsistency = ReadConsistency.parse(reads.getDefaultConsistency(),
				"leader.follower-reads.default-consistency");
		if (defaultConsistency == ReadConsistency.BOOKMARK || defaultConsistency == ReadConsistency.BOUNDED) {
			throw new IllegalArgumentException(
					"leader.follower-reads.default-consistency must be index or leader: a " + defaultConsistency.value()
							+ " read needs a header of its own, was " + reads.getDefaultConsistency());
		}
		long retryAfter = reads.getRetryAfter().toSeconds() + ((reads.getRetryAfter().toNanosPart() > 0) ? 1 : 0);
		return new FollowerReadSettings(reads.getWait(),
				reads.getUnservable() == LeaderProperties.FollowerReads.Unservable.FORWARD, defaultConsistency,
				reads.getForwardTimeout(), retryAfter);
	}

	@Bean
	@ConditionalOnMissingBean
	FollowerReadWebMvcConfigurer leaderFollowerReadWebMvcConfigurer(Leadership leadership, LeaseStatus status,
			ObjectProvider<DecisionLog> log, FollowerReadSettings settings) {
		return new FollowerReadWebMvcConfigurer(new FollowerReadInterceptor(log.getIfAvailable(), leadership,
				new LeaderForwarder(leadership, status, settings.forwardTimeout()), settings));
	}

	@Bean
	@ConditionalOnMissingBean
	AnnotatedHandlers leaderAnnotatedHandlers(ListableBeanFactory beanFactory, Enrolment enrolment,
			ObjectProvider<DecisionLog> log) {
		return new AnnotatedHandlers(beanFactory, enrolment, log.getIfAvailable());
	}

	@Bean
	@ConditionalOnMissingBean
	@ConditionalOnBean(DecisionLog.class)
	FollowerReadBodyAdvice leaderFollowerReadBodyAdvice(DecisionLog log) {
		return new FollowerReadBodyAdvice(log);
	}

	/**
	 * Adds the {@link FollowerReadInterceptor} to Spring MVC.
	 */
	static final class FollowerReadWebMvcConfigurer implements WebMvcConfigurer {

		private final FollowerReadInterceptor interceptor;

		FollowerReadWebMvcConfigurer(FollowerReadInterceptor interceptor) {
			this.interceptor = interceptor;
		}

		@Override
		public void addInterceptors(InterceptorRegistry registry) {
			registry.addInterceptor(this.interceptor);
		}

	}

}
