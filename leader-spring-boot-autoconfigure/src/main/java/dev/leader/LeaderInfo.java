package dev.leader;

import java.time.Instant;

/**
 * A group's leader as read from the coordinator.
 *
 * @param group the group
 * @param nodeId the id of the node holding the lease
 * @param term the term of the lease
 * @param expiresAt when the lease expires, in database time
 */
public record LeaderInfo(String group, String nodeId, long term, Instant expiresAt) {
}
