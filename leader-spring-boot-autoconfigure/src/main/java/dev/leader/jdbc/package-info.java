/**
 * What the SQL store families share: the choice of the data source
 * ({@link dev.leader.jdbc.CoordinationDataSource}), the
 * {@link dev.leader.jdbc.JdbcDialect} that tells the database apart, the
 * {@link dev.leader.jdbc.TablePrefix}, the schema migration, statement and connection
 * helpers, and the {@link dev.leader.jdbc.JdbcStoreFamily} SPI through which
 * {@link dev.leader.jdbc.JdbcStoresAutoConfiguration} asks the family of the detected
 * database for its stores. Each engine's stores live in their own package
 * ({@code dev.leader.postgres}, {@code dev.leader.mariadb}), which this one never refers
 * to.
 */
@NullMarked
package dev.leader.jdbc;

import org.jspecify.annotations.NullMarked;
