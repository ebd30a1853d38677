package dev.leader.benchmarks;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;

import javax.sql.DataSource;

import dev.leader.fencing.FencingStore;
import dev.leader.lease.CoordinationStore;
import dev.leader.mariadb.MariaDbCoordinationStore;
import dev.leader.mariadb.MariaDbFencingStore;
import dev.leader.postgres.PostgresCoordinationStore;
import dev.leader.postgres.PostgresFencingStore;

/**
 * What differs between the two servers for the harness: the drivers' URLs, the starter's
 * stores, the SQL of the database clock and how its timestamps read.
 */
enum Dialect {

	/**
	 * PostgreSQL, with {@code LISTEN/NOTIFY}.
	 */
	POSTGRESQL,

	/**
	 * MariaDB, with the {@code GET_LOCK} wake-up; its timestamps are {@code DATETIME(6)}
	 * in UTC, and its clock the expression the starter's MariaDB stores use.
	 */
	MARIADB;

	/**
	 * Returns the dialect of a JDBC URL.
	 * @param url the URL
	 * @return the dialect
	 * @throws IllegalArgumentException if the URL is of neither server
	 */
	static Dialect of(String url) {
		if (url.startsWith("jdbc:postgresql:")) {
			return POSTGRESQL;
		}
		if (url.startsWith("jdbc:mariadb:")) {
			return MARIADB;
		}
		throw new IllegalArgumentException(
				"LEADER_BENCH_JDBC_URL must start with jdbc:postgresql: or jdbc:mariadb:, was " + url);
	}

	/**
	 * Returns the unit of {@link ServerStatistics.Counters#transactions()}: transactions
	 * on PostgreSQL, the storage engine's commits on MariaDB.
	 * @return the unit, per second
	 */
	String transactionUnit() {
		return (this == POSTGRESQL) ? "tx/s" : "commits/s";
	}

	/**
	 * Returns the user the harness connects as when none is given.
	 * @return the user
	 */
	String defaultUser() {
		return (this == POSTGRESQL) ? "postgres" : "root";
	}

	/**
	 * Returns the SQL expression of the database clock at its evaluation, as the
	 * starter's stores read it.
	 * @return the expression
	 */
	String clock() {
		return (this == POSTGRESQL) ? "clock_timestamp()"
				: "(UTC_TIMESTAMP(6) + INTERVAL TIMESTAMPDIFF(MICROSECOND, NOW(6), SYSDATE(6)) MICROSECOND)";
	}

	/**
	 * Reads a timestamp the database clock wrote, such as a lease's {@code acquired_at},
	 * or {@link #clock()}.
	 * @param row the row
	 * @param column the column, from 1
	 * @return the instant
	 */
	Instant instant(ResultSet row, int column) throws SQLException {
		return (this == POSTGRESQL) ? row.getObject(column, OffsetDateTime.class).toInstant()
				: row.getObject(column, LocalDateTime.class).toInstant(ZoneOffset.UTC);
	}

	CoordinationStore coordinationStore(DataSource dataSource, Duration queryTimeout) {
		return (this == POSTGRESQL) ? new PostgresCoordinationStore(dataSource, BenchDatabase.PREFIX, queryTimeout)
				: new MariaDbCoordinationStore(dataSource, BenchDatabase.PREFIX, queryTimeout);
	}

	FencingStore fencingStore(DataSource dataSource, Duration queryTimeout, Duration holdLimit,
			CoordinationStore coordination) {
		return (this == POSTGRESQL)
				? new PostgresFencingStore(dataSource, BenchDatabase.PREFIX, queryTimeout, holdLimit)
				: new MariaDbFencingStore(dataSource, BenchDatabase.PREFIX, queryTimeout, holdLimit,
						(coordination instanceof MariaDbCoordinationStore mariaDb) ? mariaDb : null);
	}

	/**
	 * Returns the sample application's argument that names a node's connections, so that
	 * the server lists them under the node's name.
	 * @param name the node's name
	 * @return the argument
	 */
	String connectionNameArgument(String name) {
		return (this == POSTGRESQL) ? "--spring.datasource.hikari.data-source-properties.ApplicationName=" + name
				: "--spring.datasource.hikari.data-source-properties.connectionAttributes=program_name:" + name;
	}

	/**
	 * Describes the server and its durability settings, for the {@code MACHINE} line.
	 * @param connection a connection to the server
	 * @return the description
	 */
	String describe(Connection connection) throws SQLException {
		String sql = (this == POSTGRESQL)
				? "SELECT 'PostgreSQL ' || current_setting('server_version') || ' (synchronous_commit=' "
						+ "|| current_setting('synchronous_commit') || ', fsync=' || current_setting('fsync') || ')'"
				: "SELECT CONCAT('MariaDB ', VERSION(), ' (innodb_flush_log_at_trx_commit=', "
						+ "@@innodb_flush_log_at_trx_commit, ', sync_binlog=', @@sync_binlog, ')')";
		try (Statement statement = connection.createStatement(); ResultSet row = statement.executeQuery(sql)) {
			row.next();
			return row.getString(1);
		}
	}

}
