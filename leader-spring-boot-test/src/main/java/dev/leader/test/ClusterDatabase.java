package dev.leader.test;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.time.OffsetDateTime;
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
 * The database side of a {@link Cluster}: the test's schema, a pool on it with the schema
 * owner's rights, and the roles the nodes log in with.
 * <p>
 * Every node logs in with a role of its own, and every session of it takes the cluster's
 * shared role, which owns what the nodes create: the nodes share their tables, while
 * {@link #terminateSessions} and {@link #refuseConnections} hit one node alone. Roles are
 * server-wide, so their names come from the schema's, which is unique to the test.
 */
final class ClusterDatabase {

	private static final String UNDEFINED_TABLE = "42P01";

	private final TestDatabase database;

	private final HikariDataSource dataSource;

	private final Map<String, Role> roles = new ConcurrentHashMap<>();

	private @Nullable String sharedRole;

	ClusterDatabase(TestDatabase database) {
		this.database = database;
		this.dataSource = database.dataSource(2);
	}

	/**
	 * Creates the shared role and, if asked, the starter's tables.
	 * @param tables the prefix of the starter's tables to create, or {@code null} if the
	 * nodes create them, as an application's migrations do
	 */
	void prepare(@Nullable TablePrefix tables) {
		if (tables != null) {
			new LeaderSchemaMigration(this.dataSource, tables).migrate();
		}
		// Nodes create tables, such as the application's migrations, as this role, so
		// that every node may use them.
		String shared = this.database.schema() + "_nodes";
		execute("CREATE ROLE " + shared + " NOLOGIN");
		this.sharedRole = shared;
		execute("GRANT USAGE, CREATE ON SCHEMA " + this.database.schema() + " TO " + shared);
	}

	TestDatabase database() {
		return this.database;
	}

	HikariDataSource dataSource() {
		return this.dataSource;
	}

	/**
	 * Returns the role a node logs in with, creating it on the node's first start, and
	 * lets the nodes use the tables and sequences that exist now.
	 * @param nodeId the node
	 * @param name the role's name if it is created now
	 * @return the node's role
	 */
	Role login(String nodeId, String name) {
		Role role = this.roles.computeIfAbsent(nodeId, (id) -> createRole(name));
		// Tables the test created since the last start: every node may use them.
		String schema = this.database.schema();
		execute("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA " + schema + " TO " + this.sharedRole);
		execute("GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA " + schema + " TO " + this.sharedRole);
		return role;
	}

	/**
	 * Reads a group's lease.
	 * @param tables the prefix of the starter's tables
	 * @param group the group
	 * @return the lease, or empty if the group has none yet, or the starter's tables do
	 * not exist yet
	 */
	Optional<Lease> lease(TablePrefix tables, String group) {
		String sql = """
				SELECT holder, term, renewed_at, expires_at, clock_timestamp()
				FROM %sleases WHERE group_name = ?
				""".formatted(tables.value());
		try (Connection connection = this.dataSource.getConnection();
				PreparedStatement statement = connection.prepareStatement(sql)) {
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
			if (UNDEFINED_TABLE.equals(ex.getSQLState())) {
				return Optional.empty();
			}
			throw new IllegalStateException("Could not read the lease of " + group, ex);
		}
	}

	int terminateSessions(String nodeId) {
		String sql = """
				SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
				FROM pg_stat_activity WHERE usename = ?
				""";
		// By role, which is unique to this cluster's schema: node ids repeat across test
		// classes and runs.
		try (Connection connection = this.dataSource.getConnection();
				PreparedStatement statement = connection.prepareStatement(sql)) {
			statement.setString(1, role(nodeId).name());
			try (ResultSet row = statement.executeQuery()) {
				row.next();
				return row.getInt(1);
			}
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not terminate the sessions of " + nodeId, ex);
		}
	}

	void refuseConnections(String nodeId) {
		execute("ALTER ROLE " + role(nodeId).name() + " NOLOGIN");
	}

	void allowConnections(String nodeId) {
		execute("ALTER ROLE " + role(nodeId).name() + " LOGIN");
	}

	/**
	 * Drops the roles; after the schema is dropped, as it holds what the shared role
	 * owns.
	 */
	void dropRoles() {
		this.roles.values().forEach((role) -> execute("DROP ROLE IF EXISTS " + role.name()));
		this.roles.clear();
		if (this.sharedRole != null) {
			execute("DROP ROLE IF EXISTS " + this.sharedRole);
			this.sharedRole = null;
		}
	}

	private Role role(String nodeId) {
		Role role = this.roles.get(nodeId);
		if (role == null) {
			throw new IllegalArgumentException("No node " + nodeId + " was started");
		}
		return role;
	}

	private Role createRole(String name) {
		Role role = new Role(name, UUID.randomUUID().toString().replace("-", ""));
		execute("CREATE ROLE " + role.name() + " LOGIN PASSWORD '" + role.password() + "' IN ROLE " + this.sharedRole);
		// Sessions take the shared role at once: what one node creates, the others may
		// use.
		execute("ALTER ROLE " + role.name() + " SET role = '" + this.sharedRole + "'");
		return role;
	}

	private void execute(String sql) {
		try (Connection connection = this.dataSource.getConnection();
				Statement statement = connection.createStatement()) {
			statement.execute(sql);
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not execute " + sql, ex);
		}
	}

	private static Instant instant(ResultSet row, int column) throws SQLException {
		return row.getObject(column, OffsetDateTime.class).toInstant();
	}

	/**
	 * The database role a node logs in with; the name is generated, so it needs no
	 * quoting.
	 *
	 * @param name the role's name
	 * @param password the role's password
	 */
	record Role(String name, String password) {
	}

}
