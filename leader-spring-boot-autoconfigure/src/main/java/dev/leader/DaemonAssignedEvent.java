package dev.leader;

/**
 * Published on a node when it receives an assignment of a daemon, just before it starts
 * the agent.
 *
 * @param daemon the daemon
 * @param generation the assignment's generation
 * @param nodeId this node's id
 */
public record DaemonAssignedEvent(String daemon, long generation, String nodeId) {
}
