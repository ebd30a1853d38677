/**
 * etcd implementation of the coordination store. A group's lease is a key attached to an
 * etcd lease, and its term is the key's create revision; a node is a key attached to an
 * etcd lease of its own. {@code EtcdKeys} holds the key layout and the values,
 * {@code EtcdCalls} bounds every call and turns failures into Spring's
 * {@code DataAccessException}s, and {@code EtcdReleaseWatch} delivers the release
 * wake-ups from a watch.
 */
@NullMarked
package dev.leader.etcd;

import org.jspecify.annotations.NullMarked;
