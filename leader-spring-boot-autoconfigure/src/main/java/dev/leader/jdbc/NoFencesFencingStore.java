package dev.leader.jdbc;

import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.SQLException;

import dev.leader.FencingToken;
import dev.leader.fencing.FencingStore;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * The fencing store of a node whose leases another engine keeps (etcd, or a coordination
 * store of the application's own) while the application's {@code DataSource} leads to a
 * database the starter has no tables for (H2, HSQLDB, Derby, MySQL, ...): the node
 * coordinates as usual, and only the fenced writes to that database, which need the
 * fences table of PostgreSQL or MariaDB, are refused, each with a message that says so.
 * The node says so at startup too, in one WARN line.
 */
final class NoFencesFencingStore implements FencingStore {

	private static final Log logger = LogFactory.getLog(JdbcStoresAutoConfiguration.class);

	private final String database;

	private NoFencesFencingStore(String database) {
		this.database = database;
	}

	/**
	 * Creates the store and logs what the node goes without.
	 * @param dataSource the data source the starter would keep the fences in
	 * @return the store
	 */
	static NoFencesFencingStore warn(CoordinationDataSource dataSource) {
		NoFencesFencingStore store = new NoFencesFencingStore(describe(dataSource));
		logger.warn("The nodes coordinate through another engine than the application's database (leader.etcd."
				+ "endpoints, or a CoordinationStore bean of the application's), and the application's DataSource "
				+ "leads to " + store.database + ", where the starter keeps no fences table: fenced writes to it need "
				+ "PostgreSQL or MariaDB 10.11 or later. Fencing.advance, Fencing.guard and @LeaderOnly(fenced = "
				+ "true) fail when called; leadership, daemons and the decision log work as usual.");
		return store;
	}

	// The database's product and version as its driver reports them, else the URL's
	// sub-protocol only (the rest may hold credentials).
	private static String describe(CoordinationDataSource dataSource) {
		try (Connection connection = dataSource.dataSource().getConnection()) {
			DatabaseMetaData metaData = connection.getMetaData();
			return metaData.getDatabaseProductName() + " " + metaData.getDatabaseProductVersion();
		}
		catch (SQLException | RuntimeException ex) {
			String url = dataSource.url();
			return "a database that did not answer at startup"
					+ ((url != null) ? " (" + JdbcDialect.scheme(url) + "…)" : "");
		}
	}

	@Override
	public @Nullable LeaseLock lockLease(FencingToken token, String nodeId) {
		throw new UnsupportedOperationException("Fencing.guard (and @LeaderOnly(fenced = true)) locks the lease in "
				+ "the application's database, but the leases of group '" + token.group() + "' are kept by another "
				+ "engine (leader.etcd.endpoints, or a CoordinationStore bean of the application's), and the "
				+ "application's DataSource leads to " + this.database + ", where the starter keeps no fences table "
				+ "either: fenced writes to the application's database need PostgreSQL or MariaDB 10.11 or later. "
				+ "Remove fenced = true, or pass the token to the system you write to and let it keep the highest "
				+ "term seen");
	}

	@Override
	public @Nullable Fence advance(String resource, FencingToken token) {
		throw new UnsupportedOperationException("Fencing.advance keeps the highest term of '" + resource
				+ "' in the fences table of the application's database, but the application's DataSource leads to "
				+ this.database + ", where the starter keeps no tables: the fences table needs PostgreSQL or "
				+ "MariaDB 10.11 or later. Pass the token to the system you write to and let it keep the highest "
				+ "term seen");
	}

}
