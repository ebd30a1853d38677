package dev.leader.log;

import dev.leader.Leadership;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Configuration of the {@link DecisionLog} on the context's {@link LogStore}, with every
 * {@link LogApplier} bean and the context's {@link LogRetention}; the logs are followed
 * while the context runs. Imported by {@code LeaderAutoConfiguration}; public only for
 * that import, not for application use.
 */
@Configuration(proxyBeanMethods = false)
public final class DecisionLogConfiguration {

	@Bean
	@ConditionalOnMissingBean
	@ConditionalOnBean(LogStore.class)
	DecisionLog leaderDecisionLog(LogStore store, Leadership leadership, ObjectProvider<LogApplier> appliers,
			ObjectProvider<LogRetention> retention) {
		return new DecisionLog(store, leadership.nodeId(), appliers.orderedStream().toList(),
				retention.getIfAvailable(LogRetention::keepAll), leadership::token);
	}

	@Bean
	@ConditionalOnBean(DecisionLog.class)
	DecisionLogLifecycle leaderDecisionLogLifecycle(DecisionLog log) {
		return new DecisionLogLifecycle(log);
	}

	/**
	 * Follows the logs from the context's start to its stop.
	 */
	static final class DecisionLogLifecycle implements SmartLifecycle {

		private final DecisionLog log;

		private volatile boolean running;

		DecisionLogLifecycle(DecisionLog log) {
			this.log = log;
		}

		@Override
		public void start() {
			this.log.start();
			this.running = true;
		}

		@Override
		public void stop() {
			this.log.stop();
			this.running = false;
		}

		@Override
		public boolean isRunning() {
			return this.running;
		}

	}

}
