/**
 * The decision log of a group: entries that only the group's leader appends, each fenced
 * by its term, and that every node applies in order, exactly once, to its
 * {@link dev.leader.log.LogApplier}s, so that followers serve reads from local state with
 * the consistency the caller asks for.
 * <p>
 * Threads: appends and reads run on the caller's thread. Each group with an applier has a
 * {@code leader-log-<group>} thread that reads and applies entries; it is woken by the
 * store's append notifications and by the checks of {@link dev.leader.log.DecisionLog}.
 * The state a group's tail shares between threads (applied index, confirmations) is
 * guarded by that tail's monitor.
 */
@NullMarked
package dev.leader.log;

import org.jspecify.annotations.NullMarked;
