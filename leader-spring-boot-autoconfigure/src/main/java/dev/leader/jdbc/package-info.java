/**
 * JDBC implementation of the stores, on PostgreSQL. All SQL lives here, in one statement
 * per transition, as text-block templates in the placeholder syntax of the Flyway
 * migrations ({@code ${prefix}}), rendered once by {@link dev.leader.jdbc.TablePrefix}:
 * {@code CoordinationSql} and {@code DaemonSql} hold the statements of the coordination
 * and daemon stores, {@code PostgresFencingStore} its own two. Rows are read by column
 * label. {@code KeptConnection} runs the coordination store's round trips on the
 * connection it keeps, and {@code NotificationHub} is the node's one {@code LISTEN}
 * connection with its thread.
 */
@NullMarked
package dev.leader.jdbc;

import org.jspecify.annotations.NullMarked;
