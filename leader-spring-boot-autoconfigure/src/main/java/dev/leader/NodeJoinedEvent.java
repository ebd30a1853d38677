package dev.leader;

/**
 * Published on every node when it sees a live node it did not see before, itself
 * included.
 *
 * @param node the node
 */
public record NodeJoinedEvent(NodeInfo node) {
}
