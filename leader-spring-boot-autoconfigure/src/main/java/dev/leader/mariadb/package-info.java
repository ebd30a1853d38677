/**
 * The MariaDB store family: the coordination, daemon, fencing and log stores on MariaDB
 * 10.11 and later, wired together by
 * {@link dev.leader.mariadb.MariaDbStoresAutoConfiguration}. {@code MariaDbSql} holds
 * their statements, {@code MariaDbConnections} sets up the connections they borrow, and
 * the coordination store's heartbeat ({@code MariaDbHeartbeat}) reads the daemon rows and
 * the log heads for the family's daemon and log stores, and the terms' expiries for its
 * guards, when the coordination store is the family's own.
 */
@NullMarked
package dev.leader.mariadb;

import org.jspecify.annotations.NullMarked;
