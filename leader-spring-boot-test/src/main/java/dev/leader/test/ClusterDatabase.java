package dev.leader.test;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.jdbc.LeaderSchemaMigration;
import dev.leader.jdbc.TablePrefix;
import dev.leader.test.Cluster.Lease;
import org.jspecify.annotations.Nullable;

/**
 * The database side of a {@link Cluster}: a fresh database of the test's own (a schema on
 * PostgreSQL, a database on MariaDB), a pool on it with its owner's rights, and the
 * database users the nodes log in with, one per node id, so that
 * {@link #terminateSessions} and {@link #refuseConnections} hit one node alone. User
 * names are server-wide, so they come from the database's name, which is unique to the
 * test. {@link PostgresClusterDatabase} and {@link MariaDbClusterDatabase} differ in how
 * they create, grant, find and end.
 */
abstract sealed class ClusterDatabase permits PostgresClusterDatabase, MariaDbClusterDatabase {

	private final HikariDataSource dataSource;

	private final Map<String, Role> roles = new ConcurrentHashMap<>();

	private final String name;

	/**
	 * Creates the cluster's side of a fresh database.
	 * @param dataSource a pool on it with its owner's rights, on the URL the nodes use
	 * @param name the name of the schema or database, unique to the test
	 */
	ClusterDatabase(HikariDataSource dataSource, String name) {
		this.dataSource = dataSource;
		this.name = name;
	}

	/**
	 * Returns the JDBC URL the nodes use, the owner's pool's.
	 * @return the URL
	 */
	final String url() {
		return this.dataSource.getJdbcUrl();
	}

	/**
	 * Returns the name of the test's schema or database, unique to the test.
	 * @return the name
	 */
	final String name() {
		return this.name;
	}

	/**
	 * Creates the starter's tables if asked, and whatever the node users need before the
	 * first one is created.
	 * @param tables the prefix of the starter's tables to create, or {@code null} if the
	 * nodes create them, as an application's migrations do
	 */
	void prepare(@Nullable TablePrefix tables) {
		if (tables != null) {
			new LeaderSchemaMigration(this.dataSource, tables).migrate();
		}
	}

	HikariDataSource dataSource() {
		return this.dataSource;
	}

	/**
	 * Returns the user a node logs in with, creating it on the node's first start, and
	 * lets the nodes use what the test created since the last start.
	 * @param nodeId the node
	 * @param name the user's name if it is created now
	 * @return the node's user
	 */
	Role login(String nodeId, String name) {
		Role role = this.roles.computeIfAbsent(nodeId,
				(id) -> createRole(new Role(name, UUID.randomUUID().toString().replace("-", ""))));
		grantExisting();
		return role;
	}

	/**
	 * Creates a node's user, which may use everything in the test's database.
	 * @param role its name and password
	 * @return the role
	 */
	abstract Role createRole(Role role);

	/**
	 * Lets the nodes use the tables and sequences that exist now, where grants on the
	 * database do not cover those created later.
	 */
	abstract void grantExisting();

	/**
	 * Reads a group's lease.
	 * @param tables the prefix of the starter's tables
	 * @param group the group
	 * @return the lease, or empty if the group has none yet, or the starter's tables do
	 * not exist yet
	 */
	Optional<Lease> lease(TablePrefix tables, String group) {
		try (Connection connection = this.dataSource.getConnection();
				PreparedStatement statement = connection.prepareStatement(leaseSql(tables))) {
			statement.setString(1, group);
			try (ResultSet row = statement.executeQuery()) {
				long readAt = System.nanoTime();
				if (!row.next()) {
					return Optional.empty();
				}
				return Optional.of(new Lease(group, row.getString(1), row.getLong(2), instant(row, 3), instant(row, 4),
						instant(row, 5), readAt));
			}
		}
		catch (SQLException ex) {
			if (undefinedTable(ex)) {
				return Optional.empty();
			}
			throw new IllegalStateException("Could not read the lease of " + group, ex);
		}
	}

	/**
	 * Returns the statement that reads a lease: holder, term, renewed at, expires at and
	 * the database clock, for the group given as the one parameter.
	 * @param tables the prefix of the starter's tables
	 * @return the SQL
	 */
	abstract String leaseSql(TablePrefix tables);

	/**
	 * Reads a database instant of the lease's row.
	 * @param row the row
	 * @param column the column
	 * @return the instant
	 * @throws SQLException if the column cannot be read
	 */
	abstract Instant instant(ResultSet row, int column) throws SQLException;

	/**
	 * Tells whether a statement failed because the table does not exist.
	 * @param ex the failure
	 * @return whether the table is missing
	 */
	abstract boolean undefinedTable(SQLException ex);

	/**
	 * Ends every database session of a node.
	 * @param nodeId the node
	 * @return how many sessions were ended
	 */
	abstract int terminateSessions(String nodeId);

	abstract void refuseConnections(String nodeId);

	abstract void allowConnections(String nodeId);

	/**
	 * Drops the test's schema or database and everything in it.
	 */
	abstract void dropDatabase();

	/**
	 * Drops the node users; after the database, which holds what they may own.
	 */
	void dropRoles() {
		this.roles.values().forEach(this::dropRole);
		this.roles.clear();
	}

	abstract void dropRole(Role role);

	Role role(String nodeId) {
		Role role = this.roles.get(nodeId);
		if (role == null) {
			throw new IllegalArgumentException("No node " + nodeId + " was started");
		}
		return role;
	}

	void execute(String sql) {
		try (Connection connection = this.dataSource.getConnection();
				Statement statement = connection.createStatement()) {
			statement.execute(sql);
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not execute " + sql, ex);
		}
	}

	/**
	 * The database user a node logs in with; the name is generated, so it needs no
	 * quoting.
	 *
	 * @param name the user's name
	 * @param password the password
	 */
	record Role(String name, String password) {
	}

}
