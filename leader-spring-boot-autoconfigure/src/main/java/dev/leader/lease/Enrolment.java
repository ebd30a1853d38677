package dev.leader.lease;

import java.util.Set;

import org.jspecify.annotations.Nullable;

/**
 * What the features built on a node's leadership enrol with it: the groups they need led,
 * what the node advertises to the others through its heartbeat, and the measurements and
 * signals they want. The engine implements it, next to {@link dev.leader.Leadership} and
 * {@link LeaseStatus}, so that the features depend on these three views, not on the
 * engine.
 */
public interface Enrolment {

	/**
	 * Adds a group to take part in; a group added while running joins the election on the
	 * next round trip.
	 * @param group the group name
	 * @throws IllegalArgumentException if the name is invalid
	 */
	void addGroup(String group);

	/**
	 * Sets the daemons this node advertises; the next heartbeat writes them.
	 * @param daemons the daemons this node can run
	 */
	void advertiseDaemons(Set<String> daemons);

	/**
	 * Sets the base URL and zone this node advertises in the membership; the next
	 * heartbeat writes them.
	 * @param baseUrl the URL other nodes reach this node at, or {@code null}
	 * @param zone the zone, or {@code null}
	 * @throws IllegalArgumentException if the URL or zone is invalid
	 */
	void advertiseAddress(@Nullable String baseUrl, @Nullable String zone);

	/**
	 * Sets the monitor that receives measurements for metrics; none by default. Call it
	 * before the node starts.
	 * @param monitor the monitor
	 */
	void setMonitor(LeaseMonitor monitor);

	/**
	 * Runs an action each time {@link LeaseStatus#sessionsLost()} rises, once the node
	 * stepped down from the leases that session bound.
	 * @param action the action, run on a thread of the store's; it must return quickly
	 */
	void onSessionLost(Runnable action);

}
