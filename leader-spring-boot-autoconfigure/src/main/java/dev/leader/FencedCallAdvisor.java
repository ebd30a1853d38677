package dev.leader;

import java.util.function.Supplier;

import dev.leader.fencing.Fencing;
import org.aopalliance.intercept.MethodInterceptor;

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
	 * before most beans
	 */
	FencedCallAdvisor(Supplier<Fencing> fencing) {
		super(new LeaderOnlyPointcut(LeaderOnly::fenced), guard(fencing));
		setOrder(Ordered.LOWEST_PRECEDENCE);
	}

	private static MethodInterceptor guard(Supplier<Fencing> fencing) {
		return (invocation) -> {
			fencing.get().guard(FencingToken.current());
			return invocation.proceed();
		};
	}

}
