/**
 * The README's example.
 */
@NullMarked
package dev.leader.docs.readme;

import org.jspecify.annotations.NullMarked;
