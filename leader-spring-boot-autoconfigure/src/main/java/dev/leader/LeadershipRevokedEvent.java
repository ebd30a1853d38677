package dev.leader;

/**
 * Published when this node's leadership of a group ends, once for every
 * {@link LeadershipGrantedEvent}. By the time it is published,
 * {@link Leadership#isLeader(String)} already answers {@code false} and running
 * {@link LeaderOnly} calls of that term have been interrupted (unless configured
 * otherwise).
 *
 * @param group the group
 * @param term the term that ended
 * @param nodeId this node's id
 * @param reason why it ended
 */
public record LeadershipRevokedEvent(String group, long term, String nodeId, RevokeReason reason) {
}
