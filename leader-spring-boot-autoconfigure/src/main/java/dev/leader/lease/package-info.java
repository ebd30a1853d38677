/**
 * Lease-based leader election per group: the engine, its safe window on the local monotonic clock, and
 * the store seam it runs against.
 */
@NullMarked
package dev.leader.lease;

import org.jspecify.annotations.NullMarked;
