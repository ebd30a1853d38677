/**
 * Benchmarks of the starter, run by {@link dev.leader.benchmarks.Benchmarks} with
 * {@code -Pbenchmarks}: hand-over and failover across node processes, idle database load,
 * and the hot paths with JMH.
 */
@NullMarked
package dev.leader.benchmarks;

import org.jspecify.annotations.NullMarked;
