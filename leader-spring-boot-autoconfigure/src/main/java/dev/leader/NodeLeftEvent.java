package dev.leader;

/**
 * Published on every node when a node it saw before has left: it stopped gracefully or
 * its last heartbeat is older than the node expiry.
 *
 * @param node the node as last seen
 */
public record NodeLeftEvent(NodeInfo node) {
}
