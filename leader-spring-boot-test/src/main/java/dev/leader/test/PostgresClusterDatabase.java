package dev.leader.test;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;

import dev.leader.jdbc.TablePrefix;
import org.jspecify.annotations.Nullable;

/**
 * The database of a {@link Cluster} on PostgreSQL: a schema of a {@link TestDatabase}.
 * Every node logs in with a role of its own, and every session of it takes the cluster's
 * shared role, which owns what the nodes create: the nodes share their tables, while
 * {@code pg_terminate_backend} and {@code NOLOGIN} hit one node alone.
 */
final class PostgresClusterDatabase extends ClusterDatabase {

	private static final String UNDEFINED_TABLE = "42P01";

	private final TestDatabase database;

	private @Nullable String sharedRole;

	PostgresClusterDatabase(TestDatabase database) {
		super(database.dataSource(2), database.schema());
		this.database = database;
	}

	@Override
	void prepare(@Nullable TablePrefix tables) {
		super.prepare(tables);
		// Nodes create tables, such as the application's migrations, as this role, so
		// that every node may use them.
		String shared = this.database.schema() + "_nodes";
		execute("CREATE ROLE " + shared + " NOLOGIN");
		this.sharedRole = shared;
		execute("GRANT USAGE, CREATE ON SCHEMA " + this.database.schema() + " TO " + shared);
	}

	@Override
	Role createRole(Role role) {
		execute("CREATE ROLE " + role.name() + " LOGIN PASSWORD '" + role.password() + "' IN ROLE " + this.sharedRole);
		// Sessions take the shared role at once: what one node creates, the others may
		// use.
		execute("ALTER ROLE " + role.name() + " SET role = '" + this.sharedRole + "'");
		return role;
	}

	@Override
	void grantExisting() {
		String schema = this.database.schema();
		execute("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA " + schema + " TO " + this.sharedRole);
		execute("GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA " + schema + " TO " + this.sharedRole);
	}

	@Override
	String leaseSql(TablePrefix tables) {
		return """
				SELECT holder, term, renewed_at, expires_at, clock_timestamp()
				FROM %sleases WHERE group_name = ?
				""".formatted(tables.value());
	}

	@Override
	Instant instant(ResultSet row, int column) throws SQLException {
		return row.getObject(column, OffsetDateTime.class).toInstant();
	}

	@Override
	boolean undefinedTable(SQLException ex) {
		return UNDEFINED_TABLE.equals(ex.getSQLState());
	}

	@Override
	int terminateSessions(String nodeId) {
		String sql = """
				SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
				FROM pg_stat_activity WHERE usename = ?
				""";
		// By role, which is unique to this cluster's schema: node ids repeat across test
		// classes and runs.
		try (Connection connection = dataSource().getConnection();
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

	@Override
	void refuseConnections(String nodeId) {
		execute("ALTER ROLE " + role(nodeId).name() + " NOLOGIN");
	}

	@Override
	void allowConnections(String nodeId) {
		execute("ALTER ROLE " + role(nodeId).name() + " LOGIN");
	}

	@Override
	void dropDatabase() {
		this.database.drop();
	}

	@Override
	void dropRoles() {
		super.dropRoles();
		if (this.sharedRole != null) {
			execute("DROP ROLE IF EXISTS " + this.sharedRole);
			this.sharedRole = null;
		}
	}

	@Override
	void dropRole(Role role) {
		execute("DROP ROLE IF EXISTS " + role.name());
	}

}
