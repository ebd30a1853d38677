/**
 * The application that {@code ApplicationClusterTests} starts as a cluster, in a package
 * of its own so that it scans nothing of the starter's other tests.
 */
@NullMarked
package dev.leader.test.application;

import org.jspecify.annotations.NullMarked;
