/**
 * Code samples of the reference guide's page docs/testing.md, run by the docs module's
 * build as they are printed: the single-node test on a {@code TestDatabase} schema, and
 * the cluster test with three nodes of
 * {@link dev.leader.docs.testing.InvoicingApplication} on the test class path, which
 * holds DevTools and Docker Compose support, as many applications' test class paths do.
 */
@NullMarked
package dev.leader.docs.testing;

import org.jspecify.annotations.NullMarked;
