/**
 * Auto-configuration and {@code leader.*} configuration properties.
 */
@NullMarked
package dev.leader.autoconfigure;

import org.jspecify.annotations.NullMarked;
