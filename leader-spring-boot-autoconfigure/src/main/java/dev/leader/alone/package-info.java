/**
 * Single-node mode: a node that no other process can share a coordinator with (its
 * DataSource is an in-memory embedded database, or {@code leader.enabled=false}) runs
 * alone. The election engine, the daemon coordinator, the fences and the decision log run
 * unchanged on stores in this JVM's memory, so the node leads every group and runs every
 * daemon.
 */
@NullMarked
package dev.leader.alone;

import org.jspecify.annotations.NullMarked;
