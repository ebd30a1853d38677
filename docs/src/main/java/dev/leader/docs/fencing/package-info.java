/**
 * Code samples of the reference guide's page docs/fenced-writes.md.
 */
@NullMarked
package dev.leader.docs.fencing;

import org.jspecify.annotations.NullMarked;
