package dev.leader;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs the annotated method (or every public method of the annotated type) only while
 * this node leads the group. Works on {@code @Scheduled} methods: every node schedules
 * the job, only the leader runs it.
 * <p>
 * On a node that does not lead the group, with
 * {@code leader.leader-only.when-not-leader=skip} (the default), the call is skipped and
 * returns {@code null} for {@code void}, an empty {@code Optional}, {@code OptionalInt},
 * {@code OptionalLong} or {@code OptionalDouble} for those types, and throws
 * {@link NotLeaderException} for any other return type, since no value could stand in for
 * the one the method would have computed. With {@code throw}, every skipped call throws
 * {@link NotLeaderException}.
 * <p>
 * While the call runs, {@link FencingToken#current()} returns the group and term it runs
 * under. If the leadership of that term ends before the call returns, the calling thread
 * is interrupted (unless {@code leader.leader-only.interrupt-on-revoke=false}); code that
 * must not outlast its leadership should respond to interruption and fence its writes
 * with the token.
 */
@Target({ ElementType.METHOD, ElementType.TYPE })
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface LeaderOnly {

	/**
	 * The group whose leader runs the method. Groups named here take part in the election
	 * even when they are not listed in {@code leader.groups}.
	 * @return the group name
	 */
	String group() default "default";

	/**
	 * Whether to fence the call's writes in the database: the call must run inside a
	 * transaction on the {@code DataSource} the starter keeps its leases in (the
	 * {@link LeaderDataSource @LeaderDataSource} one, else the application's), for
	 * example by also being {@code @Transactional}, and its first step in that
	 * transaction locks the group's lease row and checks that this node still holds it
	 * with the call's term (see {@link dev.leader.fencing.Fencing#guard(FencingToken)}).
	 * A stale term throws {@link StaleLeadershipException} and the transaction rolls
	 * back; a call without such a transaction (none, or one on another
	 * {@code DataSource}) fails with
	 * {@link org.springframework.transaction.IllegalTransactionStateException} instead of
	 * running unfenced.
	 * @return whether the call is fenced
	 */
	boolean fenced() default false;

}
