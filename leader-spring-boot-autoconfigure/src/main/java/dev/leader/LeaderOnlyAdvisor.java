package dev.leader;

import java.lang.reflect.Method;

import org.aopalliance.aop.Advice;
import org.jspecify.annotations.Nullable;

import org.springframework.aop.Pointcut;
import org.springframework.aop.support.AbstractPointcutAdvisor;
import org.springframework.aop.support.StaticMethodMatcherPointcut;
import org.springframework.core.Ordered;

/**
 * Applies {@link LeaderOnlyInterceptor} to methods annotated with {@link LeaderOnly} and
 * to the methods of annotated types. Ordered before transaction advice, so that a skipped
 * call never opens a transaction; the fence check of {@code fenced} calls runs inside the
 * transaction, see {@link FencedCallAdvisor}.
 */
final class LeaderOnlyAdvisor extends AbstractPointcutAdvisor {

	private final LeaderOnlyInterceptor interceptor;

	private final Pointcut pointcut = new StaticMethodMatcherPointcut() {

		@Override
		public boolean matches(Method method, @Nullable Class<?> targetClass) {
			return method.getDeclaringClass() != Object.class
					&& LeaderOnlyInterceptor.annotationOf(method, targetClass) != null;
		}

	};

	/**
	 * Creates an advisor.
	 * @param interceptor the interceptor to apply
	 */
	LeaderOnlyAdvisor(LeaderOnlyInterceptor interceptor) {
		this.interceptor = interceptor;
		setOrder(Ordered.HIGHEST_PRECEDENCE + 100);
	}

	@Override
	public Pointcut getPointcut() {
		return this.pointcut;
	}

	@Override
	public Advice getAdvice() {
		return this.interceptor;
	}

}
