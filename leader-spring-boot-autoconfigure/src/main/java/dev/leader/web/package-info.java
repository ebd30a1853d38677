/**
 * Follower reads and leader-only requests for Spring MVC handlers:
 * {@link dev.leader.web.FollowerRead} serves a read at any node with the consistency the
 * request asks for in its headers, and {@link dev.leader.web.ForwardToLeader} runs a
 * request on the group's leader, forwarding it there from any other node. Requests are
 * forwarded to the base URL that the leader advertises in the membership.
 * <p>
 * Threads: everything runs on the servlet container's request thread, which blocks while
 * it waits for the decision log or for a forwarded request, each for a bounded time.
 */
@NullMarked
package dev.leader.web;

import org.jspecify.annotations.NullMarked;
