package dev.leader;

import java.lang.reflect.Method;
import java.util.function.Predicate;

import org.jspecify.annotations.Nullable;

import org.springframework.aop.support.StaticMethodMatcherPointcut;

/**
 * Matches the methods annotated with {@link LeaderOnly}, or declared by an annotated
 * type, whose annotation passes a test; never the methods of {@link Object}. Shared by
 * {@link LeaderOnlyAdvisor} and {@link FencedCallAdvisor}, so that both find the same
 * annotation on a call.
 */
final class LeaderOnlyPointcut extends StaticMethodMatcherPointcut {

	private final Predicate<LeaderOnly> annotations;

	/**
	 * Creates a pointcut.
	 * @param annotations which of the annotations found apply
	 */
	LeaderOnlyPointcut(Predicate<LeaderOnly> annotations) {
		this.annotations = annotations;
	}

	@Override
	public boolean matches(Method method, @Nullable Class<?> targetClass) {
		if (method.getDeclaringClass() == Object.class) {
			return false;
		}
		LeaderOnly annotation = LeaderOnlyInterceptor.annotationOf(method, targetClass);
		return annotation != null && this.annotations.test(annotation);
	}

}
