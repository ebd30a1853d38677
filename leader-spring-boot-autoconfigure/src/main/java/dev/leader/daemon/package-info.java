/**
 * Daemon assignment: the leader of the daemons group hands every {@link dev.leader.DaemonAgent} to one live node that
 * can run it, through ASSIGNING, ACTIVE, REVOKING and DELETED, and every node runs what it is given.
 */
@NullMarked
package dev.leader.daemon;

import org.jspecify.annotations.NullMarked;
