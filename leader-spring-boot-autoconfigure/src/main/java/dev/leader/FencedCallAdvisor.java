package dev.leader;

import java.util.function.Supplier;

import dev.leader.fencing.Fencing;
import org.aopalliance.intercept.MethodInterceptor;
import org.jspecify.annotations.Nullable;

import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.core.Ordered;

/**
 * Guards {@code @LeaderOnly(fenced = true)} calls with
 * {@link Fencing#guard(FencingToken)}. Ordered last, so that it runs inside the call's
 * transaction advice, as the transaction's first step, while the {@link LeaderOnly} check
 * itself runs outside it and a skipped call opens no transaction.
 */
final class FencedCallAdvisor extends DefaultPointcutAdvisor {

	/**
	 * Creates an advisor.
	 * @param fencing supplies the fencing facade on first use, since advisors are created
	 * before most beans, or {@code null} if there is none: the nodes coordinate through
	 * an engine other than a database, and the application has none
	 */
	FencedCallAdvisor(Supplier<@Nullable Fencing> fencing) {
		super(new LeaderOnlyPointcut(LeaderOnly::fenced), guard(fencing));
		setOrder(Ordered.LOWEST_PRECEDENCE);
	}

	private static MethodInterceptor guard(Supplier<@Nullable Fencing> fencing) {
		return (invocation) -> {
			Fencing guard = fencing.get();
			if (guard == null) {
				throw new IllegalStateException("@LeaderOnly(fenced = true) on " + invocation.getMethod()
						+ " guards the call's transaction in the application's database, but the application has "
						+ "no DataSource: the nodes coordinate through etcd alone. Remove fenced = true, or give the "
						+ "application its DataSource and fence its writes with Fencing.advance");
			}
			guard.guard(FencingToken.current());
			return invocation.proceed();
		};
	}

}
