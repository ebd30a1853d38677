package dev.leader;

/**
 * Published on a node each time it calls a {@link DaemonAgent}, restarts after failures
 * included.
 *
 * @param daemon the daemon
 * @param generation the assignment's generation
 * @param nodeId this node's id
 */
public record DaemonStartedEvent(String daemon, long generation, String nodeId) {
}
