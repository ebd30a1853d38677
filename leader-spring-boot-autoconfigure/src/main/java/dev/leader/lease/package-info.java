/**
 * Lease-based leader election per group: the engine, its safe window on the local
 * monotonic clock, and the store seam it runs against.
 * <p>
 * {@link dev.leader.lease.LeaderEngine} is the public facade and its lifecycle; its
 * Javadoc states the threads and the locks of the whole package. Behind it, each job has
 * its class: {@code GroupLease} is one group's lease state machine on a
 * {@code MonotonicClock}, {@code GroupLeases} applies the transitions of all groups under
 * one lock and publishes their events, {@code RoundTrips} schedules and makes the round
 * trips to the {@link dev.leader.lease.CoordinationStore}, {@code ReleaseHandOver} gives
 * a lease up and takes one over on a release, {@code Membership} derives the member list
 * and its joined/left events from what a heartbeat reads, {@code SafeWindowWatchdog}
 * closes safe windows on time, and {@link dev.leader.lease.LeaseObservations} names what
 * is observed.
 */
@NullMarked
package dev.leader.lease;

import org.jspecify.annotations.NullMarked;
