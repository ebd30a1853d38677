package dev.leader.test;

import java.time.Duration;
import java.util.List;

import javax.sql.DataSource;

import dev.leader.daemon.DaemonStore;
import dev.leader.fencing.FencingStore;
import dev.leader.jdbc.FencesOnlyFencingStore;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.CoordinationStore;
import dev.leader.log.LogStore;
import dev.leader.mariadb.MariaDbCoordinationStore;
import dev.leader.mariadb.MariaDbDaemonStore;
import dev.leader.mariadb.MariaDbFencingStore;
import dev.leader.mariadb.MariaDbLogStore;
import dev.leader.postgres.PostgresCoordinationStore;
import dev.leader.postgres.PostgresDaemonStore;
import dev.leader.postgres.PostgresFencingStore;
import dev.leader.postgres.PostgresLogStore;

/**
 * The stores of a test node's database, told from its JDBC URL: {@code jdbc:mariadb:} is
 * MariaDB, and so is {@code jdbc:mysql:}, MariaDB through MySQL's driver (the fault run's
 * {@code -Dfault.mysql-driver=true}); anything else PostgreSQL. The coordination stores
 * are built as the auto-configuration builds them, with notifications (on MariaDB, the
 * wake-ups) on.
 */
enum NodeDialect {

	/**
	 * PostgreSQL's stores; the log and daemon stores follow the notifications and the
	 * heartbeat of the coordination store.
	 */
	POSTGRESQL("SELECT 1 FROM pg_sleep(?)", PostgresCoordinationStore::new,
			(dataSource, prefix, queryTimeout, holdLimit, coordination) -> new PostgresFencingStore(dataSource, prefix,
					queryTimeout, holdLimit),
			(dataSource, prefix, queryTimeout, holdLimit, coordination) -> new PostgresLogStore(dataSource, prefix,
					queryTimeout, holdLimit,
					(coordination instanceof PostgresCoordinationStore postgres) ? postgres : null),
			(dataSource, prefix, queryTimeout, holdLimit, coordination) -> new PostgresDaemonStore(dataSource, prefix,
					queryTimeout, holdLimit,
					(coordination instanceof PostgresCoordinationStore postgres) ? postgres : null)),

	/**
	 * MariaDB's stores; the log store learns of other nodes' appends from the
	 * coordination store's heartbeat.
	 */
	MARIADB("SELECT SLEEP(?)", MariaDbCoordinationStore::new,
			(dataSource, prefix, queryTimeout, holdLimit, coordination) -> new MariaDbFencingStore(dataSource, prefix,
					queryTimeout, holdLimit,
					(coordination instanceof MariaDbCoordinationStore mariaDb) ? mariaDb : null),
			(dataSource, prefix, queryTimeout, holdLimit, coordination) -> new MariaDbLogStore(dataSource, prefix,
					queryTimeout, holdLimit,
					(coordination instanceof MariaDbCoordinationStore mariaDb) ? mariaDb : null),
			(dataSource, prefix, queryTimeout, holdLimit, coordination) -> new MariaDbDaemonStore(dataSource, prefix,
					queryTimeout, holdLimit,
					(coordination instanceof MariaDbCoordinationStore mariaDb) ? mariaDb : null));

	private final String sleepSql;

	private final CoordinationStores coordinationStores;

	private final FencingStores fencingStores;

	private final LogStores logStores;

	private final DaemonStores daemonStores;

	NodeDialect(String sleepSql, CoordinationStores coordinationStores, FencingStores fencingStores,
			LogStores logStores, DaemonStores daemonStores) {
		this.daemonStores = daemonStores;
		this.sleepSql = sleepSql;
		this.coordinationStores = coordinationStores;
		this.fencingStores = fencingStores;
		this.logStores = logStores;
	}

	static NodeDialect of(String url) {
		return (url.startsWith("jdbc:mariadb:") || url.startsWith("jdbc:mysql:")) ? MARIADB : POSTGRESQL;
	}

	/**
	 * Returns a query that sleeps for its one parameter, in seconds, and returns one row
	 * of one integer column.
	 * @return the SQL
	 */
	String sleepSql() {
		return this.sleepSql;
	}

	CoordinationStore coordinationStore(DataSource dataSource, TablePrefix prefix, Duration queryTimeout) {
		return this.coordinationStores.create(dataSource, prefix, queryTimeout);
	}

	/**
	 * Turns crash takeover on for groups, as the auto-configuration does.
	 * @param store a coordination store of this dialect
	 * @param groups the crash-takeover groups
	 * @param daemonsGroup the daemons group, whose nodes are bound if it is one of them
	 */
	static void crashTakeover(CoordinationStore store, List<String> groups, String daemonsGroup) {
		if (store instanceof PostgresCoordinationStore postgres) {
			postgres.crashTakeover(groups, daemonsGroup);
		}
		else if (store instanceof MariaDbCoordinationStore mariaDb) {
			mariaDb.crashTakeover(groups, daemonsGroup);
		}
	}

	FencingStore fencingStore(DataSource dataSource, TablePrefix prefix, Duration queryTimeout, Duration holdLimit,
			CoordinationStore coordination) {
		FencingStore store = this.fencingStores.create(dataSource, prefix, queryTimeout, holdLimit, coordination);
		// Leases kept elsewhere (etcd) cannot guard a transaction here; the fences can,
		// as the store families build it.
		return (coordination instanceof PostgresCoordinationStore || coordination instanceof MariaDbCoordinationStore)
				? store : new FencesOnlyFencingStore(store);
	}

	LogStore logStore(DataSource dataSource, TablePrefix prefix, Duration queryTimeout, Duration holdLimit,
			CoordinationStore coordination) {
		return this.logStores.create(dataSource, prefix, queryTimeout, holdLimit, coordination);
	}

	DaemonStore daemonStore(DataSource dataSource, TablePrefix prefix, Duration queryTimeout, Duration holdLimit,
			CoordinationStore coordination) {
		return this.daemonStores.create(dataSource, prefix, queryTimeout, holdLimit, coordination);
	}

	@FunctionalInterface
	private interface CoordinationStores {

		CoordinationStore create(DataSource dataSource, TablePrefix prefix, Duration queryTimeout);

	}

	@FunctionalInterface
	private interface FencingStores {

		FencingStore create(DataSource dataSource, TablePrefix prefix, Duration queryTimeout, Duration holdLimit,
				CoordinationStore coordination);

	}

	@FunctionalInterface
	private interface LogStores {

		LogStore create(DataSource dataSource, TablePrefix prefix, Duration queryTimeout, Duration holdLimit,
				CoordinationStore coordination);

	}

	@FunctionalInterface
	private interface DaemonStores {

		DaemonStore create(DataSource dataSource, TablePrefix prefix, Duration queryTimeout, Duration holdLimit,
				CoordinationStore coordination);

	}

}
