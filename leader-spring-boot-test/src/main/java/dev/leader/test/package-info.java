/**
 * Test support for applications and stores of the starter: the contract suites that every
 * implementation of a store interface passes, a {@link dev.leader.test.Cluster} of the
 * application's own nodes as processes with real faults,
 * {@link dev.leader.test.FencedWrites} that checks what fenced writes committed, the
 * {@link dev.leader.test.TestDatabase} they run on, and a PostgreSQL primary and standby
 * of the test's own for failovers ({@link dev.leader.test.ReplicatedPostgres}), a cluster
 * of etcd members of the test's own ({@link dev.leader.test.EtcdCluster}), and
 * {@link dev.leader.test.TestLeadership}, which gives a node that runs alone (on H2 in
 * memory) a group's leadership or takes it away. Add
 * {@code dev.leader:leader-spring-boot-test} with test scope.
 */
@NullMarked
package dev.leader.test;

import org.jspecify.annotations.NullMarked;
