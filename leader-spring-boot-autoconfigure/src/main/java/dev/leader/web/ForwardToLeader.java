package dev.leader.web;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs the annotated Spring MVC handler method (or every handler method of the annotated
 * type) only on the group's leader: on any other node the request (method, path, query,
 * body, content type and the consistency headers) is forwarded to the leader's advertised
 * base URL and the leader's answer is returned. Usually combined with
 * {@code @LeaderOnly(group = ..., fenced = true)} on the service the handler calls, so
 * that a leader deposed while the request travels cannot write.
 * <p>
 * Answered 503 with {@code Retry-After} when the group has no leader, the leader
 * advertises no base URL, the forwarded request fails or times out
 * ({@code leader.follower-reads.forward-timeout}), or a forwarded request reaches a node
 * that does not lead: a request is forwarded at most once.
 */
@Target({ ElementType.METHOD, ElementType.TYPE })
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface ForwardToLeader {

	/**
	 * The group whose leader handles the request.
	 * @return the group name
	 */
	String group();

}
