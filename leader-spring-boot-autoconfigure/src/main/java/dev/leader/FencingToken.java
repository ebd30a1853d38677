package dev.leader;

import org.jspecify.annotations.Nullable;

/**
 * Proof of leadership of a group for one term. Terms strictly increase with every new
 * holder, so a resource that remembers the highest term it has seen can reject writes
 * from a deposed leader, whose token carries a lower term.
 * <p>
 * Inside a method annotated with {@link LeaderOnly}, {@link #current()} returns the token
 * of the running call.
 *
 * @param group the group
 * @param term the term of the lease this token was issued for
 */
public record FencingToken(String group, long term) {

	private static final ThreadLocal<@Nullable FencingToken> CURRENT = new ThreadLocal<>();

	/**
	 * Returns the token bound to the {@link LeaderOnly} call running on this thread.
	 * @return the token
	 * @throws IllegalStateException if no {@link LeaderOnly} call runs on this thread
	 */
	public static FencingToken current() {
		FencingToken token = CURRENT.get();
		if (token == null) {
			throw new IllegalStateException("No @LeaderOnly call is running on this thread; "
					+ "use Leadership.token(group) outside of @LeaderOnly methods");
		}
		return token;
	}

	/**
	 * Binds a token to the current thread for the duration of a {@link LeaderOnly} call.
	 * @param token the token, or {@code null} to restore an unbound thread
	 * @return the token bound before, to restore afterwards
	 */
	static @Nullable FencingToken bind(@Nullable FencingToken token) {
		FencingToken previous = CURRENT.get();
		if (token == null) {
			CURRENT.remove();
		}
		else {
			CURRENT.set(token);
		}
		return previous;
	}

}
