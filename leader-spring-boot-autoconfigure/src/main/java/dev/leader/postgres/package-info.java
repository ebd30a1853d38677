/**
 * The PostgreSQL store family: the coordination, daemon, fencing and log stores on
 * PostgreSQL, wired together by
 * {@link dev.leader.postgres.PostgresStoresAutoConfiguration}. All their SQL lives here,
 * in one statement per transition, as text-block templates in the placeholder syntax of
 * the Flyway migrations ({@code ${prefix}}), rendered once by
 * {@link dev.leader.jdbc.TablePrefix}: {@code CoordinationSql} and {@code DaemonSql} hold
 * the statements of the coordination and daemon stores, {@code PostgresFencingStore} its
 * own two. Rows are read by column label. {@code KeptConnection} runs the coordination
 * store's round trips on the connection it keeps, and {@code NotificationHub} is the
 * node's one {@code LISTEN} connection with its thread, which the family's daemon and log
 * stores share when the coordination store is the family's own.
 */
@NullMarked
package dev.leader.postgres;

import org.jspecify.annotations.NullMarked;
