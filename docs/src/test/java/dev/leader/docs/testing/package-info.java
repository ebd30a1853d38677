/**
 * Code samples of the reference guide's page docs/testing.md. The test classes end in
 * {@code IT}, so that the docs module's build compiles them without running them: they
 * need a PostgreSQL and, for the cluster, three JVMs.
 */
@NullMarked
package dev.leader.docs.testing;

import org.jspecify.annotations.NullMarked;
