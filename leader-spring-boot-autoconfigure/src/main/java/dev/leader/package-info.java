/**
 * Public API of leader-spring-boot-starter: {@link dev.leader.Leadership},
 * {@link dev.leader.LeaderOnly}, {@link dev.leader.FencingToken} and the application
 * events published on leadership and membership changes.
 */
@NullMarked
package dev.leader;

import org.jspecify.annotations.NullMarked;
