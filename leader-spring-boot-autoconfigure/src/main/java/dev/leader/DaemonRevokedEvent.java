package dev.leader;

/**
 * Published on a node when the leader revokes one of its daemons, for example to
 * rebalance; the node cancels the agent and waits for it to drain before it hands the
 * daemon over.
 *
 * @param daemon the daemon
 * @param generation the assignment's generation
 * @param nodeId this node's id
 */
public record DaemonRevokedEvent(String daemon, long generation, String nodeId) {
}
