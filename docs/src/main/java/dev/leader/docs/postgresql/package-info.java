/**
 * Code samples of the reference guide's page docs/postgresql.md.
 */
@NullMarked
package dev.leader.docs.postgresql;

import org.jspecify.annotations.NullMarked;
