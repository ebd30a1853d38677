package dev.leader.test;

import java.time.Duration;

import javax.sql.DataSource;

import dev.leader.fencing.FencingStore;
import dev.leader.jdbc.MariaDbCoordinationStore;
import dev.leader.jdbc.MariaDbFencingStore;
import dev.leader.jdbc.MariaDbLogStore;
import dev.leader.jdbc.PostgresCoordinationStore;
import dev.leader.jdbc.PostgresFencingStore;
import dev.leader.jdbc.PostgresLogStore;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.CoordinationStore;
import dev.leader.log.LogStore;

/**
 * The stores of a test node's database, told from its JDBC URL as the starter tells a URL
 * while the database is down: {@code jdbc:mariadb:} is MariaDB, anything else PostgreSQL.
 * The coordination stores are built as the auto-configuration builds them, with
 * notifications (on MariaDB, the wake-ups) on.
 */
enum NodeDialect {

	/**
	 * PostgreSQL's stores.
	 */
	POSTGRESQL("SELECT 1 FROM pg_sleep(?)") {

		@Override
		CoordinationStore coordinationStore(DataSource dataSource, TablePrefix prefix, Duration queryTimeout) {
			return new PostgresCoordinationStore(dataSource, prefix, queryTimeout);
		}

		@Override
		FencingStore fencingStore(DataSource dataSource, TablePrefix prefix, Duration queryTimeout,
				Duration holdLimit) {
			return new PostgresFencingStore(dataSource, prefix, queryTimeout, holdLimit);
		}

		@Override
		LogStore logStore(DataSource dataSource, TablePrefix prefix, Duration queryTimeout, Duration holdLimit,
				CoordinationStore coordination) {
			// No notifications: the fault run's nodes only append.
			return new PostgresLogStore(dataSource, prefix, queryTimeout, holdLimit, null);
		}

	},

	/**
	 * MariaDB's stores; the log store learns of other nodes' appends from the
	 * coordination store's heartbeat.
	 */
	MARIADB("SELECT SLEEP(?)") {

		@Override
		CoordinationStore coordinationStore(DataSource dataSource, TablePrefix prefix, Duration queryTimeout) {
			return new MariaDbCoordinationStore(dataSource, prefix, queryTimeout);
		}

		@Override
		FencingStore fencingStore(DataSource dataSource, TablePrefix prefix, Duration queryTimeout,
				Duration holdLimit) {
			return new MariaDbFencingStore(dataSource, prefix, queryTimeout, holdLimit);
		}

		@Override
		LogStore logStore(DataSource dataSource, TablePrefix prefix, Duration queryTimeout, Duration holdLimit,
				CoordinationStore coordination) {
			return new MariaDbLogStore(dataSource, prefix, queryTimeout, holdLimit,
					(coordination instanceof MariaDbCoordinationStore mariaDb) ? mariaDb : null);
		}

	};

	private final String sleepSql;

	NodeDialect(String sleepSql) {
		this.sleepSql = sleepSql;
	}

	static NodeDialect of(String url) {
		return url.startsWith("jdbc:mariadb:") ? MARIADB : POSTGRESQL;
	}

	/**
	 * Returns a query that sleeps for its one parameter, in seconds, and returns one row
	 * of one integer column.
	 * @return the SQL
	 */
	String sleepSql() {
		return this.sleepSql;
	}

	abstract CoordinationStore coordinationStore(DataSource dataSource, TablePrefix prefix, Duration queryTimeout);

	abstract FencingStore fencingStore(DataSource dataSource, TablePrefix prefix, Duration queryTimeout,
			Duration holdLimit);

	abstract LogStore logStore(DataSource dataSource, TablePrefix prefix, Duration queryTimeout, Duration holdLimit,
			CoordinationStore coordination);

}
