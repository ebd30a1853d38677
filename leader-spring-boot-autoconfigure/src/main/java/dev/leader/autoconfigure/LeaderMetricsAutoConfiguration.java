package dev.leader.autoconfigure;

import dev.leader.Leadership;
import dev.leader.actuate.LeaderMetrics;
import dev.leader.daemon.DaemonStatus;
import dev.leader.fencing.Fencing;
import dev.leader.lease.Enrolment;
import dev.leader.lease.LeaseStatus;
import dev.leader.log.DecisionLog;
import io.micrometer.core.instrument.MeterRegistry;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * Auto-configuration of the leadership {@link LeaderMetrics meters}, when Micrometer is
 * on the classpath and the application has a {@link MeterRegistry}. The acquire and
 * heartbeat timers come from the engine's observations, see
 * {@link LeaderAutoConfiguration}. The metrics are the monitor of the engine and of the
 * {@link DecisionLog}.
 */
@AutoConfiguration(after = LeaderAutoConfiguration.class,
		afterName = { "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
				"org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration" })
@ConditionalOnClass(MeterRegistry.class)
@ConditionalOnBean({ Leadership.class, LeaseStatus.class, Enrolment.class, MeterRegistry.class })
public final class LeaderMetricsAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean
	LeaderMetrics leaderMetrics(LeaseStatus status, Leadership leadership, ObjectProvider<Fencing> fencing,
			ObjectProvider<DaemonStatus> daemons, ObjectProvider<DecisionLog> log) {
		return new LeaderMetrics(status, leadership, fencing.getIfAvailable(), daemons.getIfAvailable(),
				log.getIfAvailable());
	}

	// Once every singleton exists, so that the application's own metrics are the engine's
	// monitor too: the metrics depend on the engine, so the engine cannot take them when
	// it is created.
	@Bean
	SmartInitializingSingleton leaderMetricsMonitor(Enrolment enrolment, ObjectProvider<LeaderMetrics> metrics,
			ObjectProvider<DecisionLog> log) {
		return () -> metrics.ifUnique((monitor) -> {
			enrolment.setMonitor(monitor);
			log.ifUnique((logs) -> logs.setMonitor(monitor));
		});
	}

}
