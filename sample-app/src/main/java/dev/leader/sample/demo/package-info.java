/**
 * The demo: a launcher that starts PostgreSQL and three nodes of the sample as separate
 * processes, serves a cluster view of all three, and injects real faults into the nodes
 * it started.
 */
@NullMarked
package dev.leader.sample.demo;

import org.jspecify.annotations.NullMarked;
