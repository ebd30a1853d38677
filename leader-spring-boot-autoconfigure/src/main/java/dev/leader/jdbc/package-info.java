/**
 * JDBC implementation of the coordination store. All SQL lives here, in one statement per transition.
 */
@NullMarked
package dev.leader.jdbc;

import org.jspecify.annotations.NullMarked;
