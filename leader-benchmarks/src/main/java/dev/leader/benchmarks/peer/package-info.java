/**
 * The peer of the sample-app benchmarks: Spring Integration's JDBC leader election in a
 * Spring Boot application of its own ({@link dev.leader.benchmarks.peer.PeerNode}).
 */
@NullMarked
package dev.leader.benchmarks.peer;

import org.jspecify.annotations.NullMarked;
