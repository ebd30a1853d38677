/**
 * A sample application of the starter: nodes that share one PostgreSQL database, with
 * leader-only jobs and daemons.
 */
@NullMarked
package dev.leader.sample;

import org.jspecify.annotations.NullMarked;
