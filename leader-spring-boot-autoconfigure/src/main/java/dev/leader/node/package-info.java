/**
 * Cluster membership: node identity, heartbeats and the joined/left view every node derives.
 */
@NullMarked
package dev.leader.node;

import org.jspecify.annotations.NullMarked;
