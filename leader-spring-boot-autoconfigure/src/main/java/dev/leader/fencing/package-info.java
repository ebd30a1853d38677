/**
 * Fenced writes: the lease guard that a transaction takes on its group's lease row, and
 * the fences table for resources written outside that row's transaction.
 */
@NullMarked
package dev.leader.fencing;

import org.jspecify.annotations.NullMarked;
