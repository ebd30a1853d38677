/**
 * Code samples of the reference guide's page docs/leadership.md.
 */
@NullMarked
package dev.leader.docs.leadership;

import org.jspecify.annotations.NullMarked;
