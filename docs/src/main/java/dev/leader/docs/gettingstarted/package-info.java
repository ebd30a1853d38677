/**
 * Code samples of the reference guide's page docs/getting-started.md.
 */
@NullMarked
package dev.leader.docs.gettingstarted;

import org.jspecify.annotations.NullMarked;
