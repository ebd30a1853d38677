/**
 * Actuator support: the {@code leadership} endpoint and health indicator.
 */
@NullMarked
package dev.leader.actuate;

import org.jspecify.annotations.NullMarked;
