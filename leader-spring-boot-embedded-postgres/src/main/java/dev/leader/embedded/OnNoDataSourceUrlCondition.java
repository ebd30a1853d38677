package dev.leader.embedded;

import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.type.AnnotatedTypeMetadata;
import org.springframework.util.StringUtils;

/**
 * Matches when neither {@code spring.datasource.url} nor
 * {@code spring.datasource.jndi-name} is set: an application that names its database
 * never gets a second one.
 */
class OnNoDataSourceUrlCondition extends SpringBootCondition {

	@Override
	public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
		for (String property : new String[] { "spring.datasource.url", "spring.datasource.jndi-name" }) {
			if (StringUtils.hasText(context.getEnvironment().getProperty(property))) {
				return ConditionOutcome.noMatch(property + " is set");
			}
		}
		return ConditionOutcome.match("neither spring.datasource.url nor spring.datasource.jndi-name is set");
	}

}
