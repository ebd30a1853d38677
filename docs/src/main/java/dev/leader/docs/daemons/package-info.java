/**
 * Code samples of the reference guide's page docs/daemons.md.
 */
@NullMarked
package dev.leader.docs.daemons;

import org.jspecify.annotations.NullMarked;
