package dev.leader.sample;

import java.util.List;

import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * What the sample's nodes coordinate through: etcd when {@code leader.etcd.endpoints}
 * names members, as the starter decides it (either form of a list property), else the
 * database of {@code spring.datasource.url}. On etcd the leases live outside the
 * database, so the sample fences its writes with the fences table
 * ({@link dev.leader.fencing.Fencing#advance}) rather than with the lease's row
 * ({@link dev.leader.fencing.Fencing#guard}); see {@link WriteFences}.
 */
public final class Coordination {

	private Coordination() {
	}

	/**
	 * Returns the etcd members that the nodes coordinate through.
	 * @param environment the environment
	 * @return the members' client URLs, empty when the nodes coordinate through the
	 * database
	 */
	public static List<String> etcdEndpoints(Environment environment) {
		return Binder.get(environment).bind("leader.etcd.endpoints", Bindable.listOf(String.class)).orElse(List.of());
	}

	/**
	 * Matches when the nodes coordinate through etcd.
	 */
	static final class OnEtcd extends SpringBootCondition {

		@Override
		public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
			return etcdEndpoints(context.getEnvironment()).isEmpty()
					? ConditionOutcome.noMatch("leader.etcd.endpoints is not set")
					: ConditionOutcome.match("leader.etcd.endpoints is set");
		}

	}

	/**
	 * Matches when the nodes coordinate through the database: the leases are rows of it.
	 */
	static final class OnDatabase extends SpringBootCondition {

		@Override
		public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
			return etcdEndpoints(context.getEnvironment()).isEmpty()
					? ConditionOutcome.match("leader.etcd.endpoints is not set")
					: ConditionOutcome.noMatch("leader.etcd.endpoints is set");
		}

	}

}
