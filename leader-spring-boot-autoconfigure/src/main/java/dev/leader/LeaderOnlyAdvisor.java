package dev.leader;

import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.core.Ordered;

/**
 * Applies {@link LeaderOnlyInterceptor} to methods annotated with {@link LeaderOnly} and
 * to the methods of annotated types. Ordered before transaction advice, so that a skipped
 * call never opens a transaction; the fence check of {@code fenced} calls runs inside the
 * transaction, see {@link FencedCallAdvisor}.
 */
final class LeaderOnlyAdvisor extends DefaultPointcutAdvisor {

	/**
	 * Creates an advisor.
	 * @param interceptor the interceptor to apply
	 */
	LeaderOnlyAdvisor(LeaderOnlyInterceptor interceptor) {
		super(new LeaderOnlyPointcut((annotation) -> true), interceptor);
		setOrder(Ordered.HIGHEST_PRECEDENCE + 100);
	}

}
