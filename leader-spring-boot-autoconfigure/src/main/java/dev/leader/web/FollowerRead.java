package dev.leader.web;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Serves the annotated Spring MVC handler method (or every handler method of the
 * annotated type) from this node's applied state of the group's decision log, with the
 * consistency the request asks for:
 * <ul>
 * <li>{@code Leader-Bookmark: <group>@<term>.<index>}: the handler runs only once this
 * node has applied the bookmark's entry (read-your-writes across nodes). A bookmark of
 * another group is answered 400; one whose entry has another term on this node (a history
 * the database lost) is answered 409.</li>
 * <li>{@code Max-Staleness: <milliseconds>}: the handler runs only while this node is
 * provably at most that far behind the log ({@code bounded}).</li>
 * <li>{@code Read-Consistency}: {@code bookmark}, {@code bounded}, {@code index} (one
 * statement reads the log's last index; the handler runs once it is applied, so it sees
 * every append that committed before the request) or {@code leader} (the request goes to
 * the group's leader). Without it: {@code bookmark} if the request carries a bookmark,
 * {@code bounded} if it carries a Max-Staleness, else
 * {@code leader.follower-reads.default-consistency}, {@code index} by default.</li>
 * </ul>
 * A read that cannot be served within {@code leader.follower-reads.wait} is forwarded to
 * the group's leader, or answered 503 with {@code Retry-After} under
 * {@code leader.follower-reads.unservable=reject}. A forwarded request is marked, and a
 * node never forwards a marked request again: it answers 503 instead. Every response
 * carries {@code Leader-Bookmark}, what the serving node had applied of the group when
 * the handler ran, and {@code Staleness-Millis}, its staleness bound then (absent until
 * the node has confirmed one, which its first heartbeat does); malformed headers are
 * answered 400.
 * <p>
 * Requires a {@code LogApplier} bean of the group on every node, and a servlet web
 * application with a {@code DecisionLog}.
 */
@Target({ ElementType.METHOD, ElementType.TYPE })
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface FollowerRead {

	/**
	 * The group whose decision log the handler reads.
	 * @return the group name
	 */
	String group();

}
