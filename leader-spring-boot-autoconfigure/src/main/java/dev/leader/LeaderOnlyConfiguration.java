package dev.leader;

import java.time.Duration;
import java.util.Optional;
import java.util.Set;

import dev.leader.fencing.Fencing;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;

/**
 * Configuration of the {@link LeaderOnly} advice: the advisor that runs annotated methods
 * only on the leader, and the one that guards {@code fenced} calls inside their
 * transaction. Imported by {@code LeaderAutoConfiguration}, which makes sure an
 * auto-proxy creator exists; public only for that import, not for application use.
 */
@Configuration(proxyBeanMethods = false)
public final class LeaderOnlyConfiguration {

	@Bean
	@ConditionalOnMissingBean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static FencedCallAdvisor leaderFencedCallAdvisor(ObjectProvider<Fencing> fencing) {
		return new FencedCallAdvisor(fencing::getIfAvailable);
	}

	@Bean
	@ConditionalOnMissingBean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static LeaderOnlyAdvisor leaderOnlyAdvisor(ObjectProvider<Leadership> leadership, Environment environment) {
		// Bound directly: the advisor is created while post-processors register, too
		// early for the properties bean, which checks the values when it is bound.
		Binder binder = Binder.get(environment);
		boolean throwWhenNotLeader = binder.bind("leader.leader-only.when-not-leader", String.class)
			.map((value) -> value.trim().equalsIgnoreCase("throw"))
			.orElse(false);
		boolean interruptOnRevoke = binder.bind("leader.leader-only.interrupt-on-revoke", Boolean.class).orElse(true);
		return new LeaderOnlyAdvisor(
				new LeaderOnlyInterceptor(new LazyLeadership(leadership), throwWhenNotLeader, interruptOnRevoke));
	}

	/**
	 * Lets the advisor, an infrastructure bean created early, reach the leadership bean
	 * only when first used.
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
		public Optional<FencingToken> token(String group) {
			return this.provider.getObject().token(group);
		}

		@Override
		public Optional<LeaderInfo> leader(String group) {
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

}
