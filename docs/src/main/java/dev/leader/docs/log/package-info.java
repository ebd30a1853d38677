/**
 * Code samples of the reference guide's page docs/decision-log.md.
 */
@NullMarked
package dev.leader.docs.log;

import org.jspecify.annotations.NullMarked;
