package dev.leader;

import java.lang.reflect.Method;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.OptionalLong;

import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;

import org.springframework.aop.support.AopUtils;
import org.springframework.core.annotation.AnnotatedElementUtils;

/**
 * Runs {@link LeaderOnly} methods only on the leader of their group, binds the
 * {@link FencingToken} of the running call, and interrupts the call's thread when that
 * leadership ends.
 */
final class LeaderOnlyInterceptor implements MethodInterceptor {

	private final Leadership leadership;

	private final boolean throwWhenNotLeader;

	private final boolean interruptOnRevoke;

	/**
	 * Creates an interceptor.
	 * @param leadership the leadership to check
	 * @param throwWhenNotLeader whether a skipped call always throws
	 * {@link NotLeaderException}
	 * @param interruptOnRevoke whether to interrupt a running call whose leadership ends
	 */
	LeaderOnlyInterceptor(Leadership leadership, boolean throwWhenNotLeader, boolean interruptOnRevoke) {
		this.leadership = leadership;
		this.throwWhenNotLeader = throwWhenNotLeader;
		this.interruptOnRevoke = interruptOnRevoke;
	}

	/**
	 * Returns the annotation a method runs under: its own, else its class's.
	 * @param method the method
	 * @param targetClass the class it is called on
	 * @return the annotation, or {@code null} if neither is annotated
	 */
	static @Nullable LeaderOnly annotationOf(Method method, @Nullable Class<?> targetClass) {
		Method specific = AopUtils.getMostSpecificMethod(method, targetClass);
		LeaderOnly annotation = AnnotatedElementUtils.findMergedAnnotation(specific, LeaderOnly.class);
		return (annotation != null) ? annotation
				: AnnotatedElementUtils.findMergedAnnotation(specific.getDeclaringClass(), LeaderOnly.class);
	}

	@Override
	public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
		Object target = invocation.getThis();
		LeaderOnly annotation = annotationOf(invocation.getMethod(),
				(target != null) ? AopUtils.getTargetClass(target) : null);
		if (annotation == null) {
			return invocation.proceed();
		}
		String group = annotation.group();
		Optional<FencingToken> token = this.leadership.token(group);
		if (token.isEmpty()) {
			return notLeader(group, invocation.getMethod());
		}
		CallGuard guard = this.interruptOnRevoke ? new CallGuard(token.get().term()) : null;
		Leadership.Registration registration = (guard != null) ? this.leadership.addListener(group, guard) : null;
		if (registration != null && !token.equals(this.leadership.token(group))) {
			// Revoked between the check and the registration, so the guard may have
			// missed it.
			registration.close();
			return notLeader(group, invocation.getMethod());
		}
		FencingToken previous = FencingToken.bind(token.get());
		try {
			return invocation.proceed();
		}
		finally {
			if (registration != null) {
				registration.close();
				guard.finish();
			}
			FencingToken.bind(previous);
		}
	}

	private @Nullable Object notLeader(String group, Method method) {
		Class<?> type = method.getReturnType();
		if (!this.throwWhenNotLeader) {
			if (type == void.class || type == Void.class) {
				return null;
			}
			if (type == Optional.class) {
				return Optional.empty();
			}
			if (type == OptionalInt.class) {
				return OptionalInt.empty();
			}
			if (type == OptionalLong.class) {
				return OptionalLong.empty();
			}
			if (type == OptionalDouble.class) {
				return OptionalDouble.empty();
			}
		}
		throw new NotLeaderException(group, "This node does not lead group '" + group + "', so "
				+ method.getDeclaringClass().getSimpleName() + "." + method.getName() + " was not run");
	}

	/**
	 * Interrupts the calling thread when the call's term is revoked, but never after the
	 * call has finished.
	 */
	private static final class CallGuard implements Leadership.LeadershipListener {

		private final long term;

		private final Thread thread = Thread.currentThread();

		private boolean finished;

		private boolean interrupted;

		CallGuard(long term) {
			this.term = term;
		}

		@Override
		public synchronized void revoked(LeadershipRevokedEvent event) {
			if (!this.finished && event.term() == this.term) {
				this.interrupted = true;
				this.thread.interrupt();
			}
		}

		synchronized void finish() {
			this.finished = true;
			if (this.interrupted) {
				// The interrupt was ours; do not leak it to whatever the thread runs
				// next.
				Thread.interrupted();
			}
		}

	}

}
