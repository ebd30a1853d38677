/**
 * etcd implementation of the stores, used as etcd's own election recipe uses it: a
 * process keeps one etcd lease, its session, kept alive by its heartbeat; a group's lease
 * is a key attached to its holder's session, and its term is the key's mod revision; a
 * node is a key attached to its session too. {@code EtcdMirror} follows the keys with one
 * watch, {@code EtcdKeys} holds the key layout and the values, and {@code EtcdCalls}
 * bounds every call and turns failures into Spring's {@code DataAccessException}s.
 */
@NullMarked
package dev.leader.etcd;

import org.jspecify.annotations.NullMarked;
