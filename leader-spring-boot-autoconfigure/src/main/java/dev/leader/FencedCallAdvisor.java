package dev.leader;

import java.lang.reflect.Method;
import java.util.function.Supplier;

import dev.leader.fencing.Fencing;
import org.aopalliance.aop.Advice;
import org.aopalliance.intercept.MethodInterceptor;
import org.jspecify.annotations.Nullable;

import org.springframework.aop.Pointcut;
import org.springframework.aop.support.AbstractPointcutAdvisor;
import org.springframework.aop.support.StaticMethodMatcherPointcut;
import org.springframework.core.Ordered;

/**
 * Guards {@code @LeaderOnly(fenced = true)} calls with
 * {@link Fencing#guard(FencingToken)}. Ordered last, so that it runs inside the call's
 * transaction advice, as the transaction's first step, while the {@link LeaderOnly} check
 * itself runs outside it and a skipped call opens no transaction.
 */
final class FencedCallAdvisor extends AbstractPointcutAdvisor {

	private final Pointcut pointcut = new StaticMethodMatcherPointcut() {

		@Override
		public boolean matches(Method method, @Nullable Class<?> targetClass) {
			LeaderOnly annotation = LeaderOnlyInterceptor.annotationOf(method, targetClass);
			return method.getDeclaringClass() != Object.class && annotation != null && annotation.fenced();
		}

	};

	private final MethodInterceptor interceptor;

	/**
	 * Creates an advisor.
	 * @param fencing supplies the fencing facade on first use, since advisors are created
	 * before most beans
	 */
	FencedCallAdvisor(Supplier<Fencing> fencing) {
		this.interceptor = (invocation) -> {
			fencing.get().guard(FencingToken.current());
			return invocation.proceed();
		};
		setOrder(Ordered.LOWEST_PRECEDENCE);
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
