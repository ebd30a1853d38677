package dev.leader;

import java.time.Instant;

import org.jspecify.annotations.Nullable;

/**
 * Published on every node when it reads a different holder or term for a group than
 * before.
 *
 * @param group the group
 * @param leaderNodeId the node now holding the lease, or {@code null} when no node holds
 * a valid lease
 * @param term the lease's term (kept when the lease is released or expires)
 * @param expiresAt when the lease expires in database time, or {@code null} when no node
 * holds it
 */
public record LeaderChangedEvent(String group, @Nullable String leaderNodeId, long term, @Nullable Instant expiresAt) {
}
