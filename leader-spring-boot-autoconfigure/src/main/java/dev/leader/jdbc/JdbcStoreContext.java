package dev.leader.jdbc;

import java.time.Duration;

import javax.sql.DataSource;

import dev.leader.autoconfigure.LeaderAutoConfiguration;
import dev.leader.autoconfigure.LeaderProperties;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.dao.DataAccessException;

/**
 * What a {@link JdbcStoreFamily} builds its stores on.
 *
 * @param coordinationDataSource the data source the starter keeps its tables in
 * @param prefix the prefix of the starter's tables
 * @param properties the starter's properties
 * @param migrated whether the schema migration runs, and so checks the database before
 * the stores use it
 */
public record JdbcStoreContext(CoordinationDataSource coordinationDataSource, TablePrefix prefix,
		LeaderProperties properties, boolean migrated) {

	// Logged under the auto-configuration's name, where applications already look for the
	// starter's startup lines.
	private static final Log logger = LogFactory.getLog(LeaderAutoConfiguration.class);

	/**
	 * Returns the data source the starter keeps its tables in.
	 * @return the data source
	 */
	public DataSource dataSource() {
		return this.coordinationDataSource.dataSource();
	}

	/**
	 * Returns the longest a statement may run ({@code leader.jdbc.query-timeout}).
	 * @return the timeout
	 */
	public Duration queryTimeout() {
		return this.properties.getJdbc().determineQueryTimeout();
	}

	/**
	 * Runs a coordination store's check that its data source leads to a writable primary,
	 * unless the schema migration runs, which checks the database before it runs. A
	 * database that does not answer yet only delays leadership: the failure to reach it
	 * is logged.
	 * @param requireWritablePrimary the check
	 */
	public void requireWritablePrimaryUnlessMigrated(Runnable requireWritablePrimary) {
		if (this.migrated) {
			return;
		}
		try {
			requireWritablePrimary.run();
		}
		catch (DataAccessException ex) {
			logger.warn("Could not check that the DataSource leads to a writable primary; leadership starts "
					+ "once the database answers: " + ex.getMessage());
		}
	}

}
