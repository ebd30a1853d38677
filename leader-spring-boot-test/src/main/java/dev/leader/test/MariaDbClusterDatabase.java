package dev.leader.test;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;

import dev.leader.jdbc.TablePrefix;

/**
 * The database of a {@link Cluster} on MariaDB: a database of a
 * {@link MariaDbTestDatabase}. Every node logs in with a user of its own, which may do
 * anything in that database and nothing elsewhere: MariaDB's grants on a database cover
 * the tables created later, so the nodes share every table whoever created it. A node's
 * sessions are found by its user in {@code information_schema.PROCESSLIST} and ended with
 * {@code KILL CONNECTION}; {@code ACCOUNT LOCK} refuses new ones. (Connection attributes
 * would name a node's sessions too, but the server shows them only with the performance
 * schema on, which it is not by default.)
 */
final class MariaDbClusterDatabase extends ClusterDatabase {

	private static final String UNDEFINED_TABLE = "42S02";

	private static final int UNKNOWN_THREAD = 1094;

	private final MariaDbTestDatabase database;

	MariaDbClusterDatabase(MariaDbTestDatabase database) {
		super(database.dataSource(2), database.name());
		this.database = database;
	}

	@Override
	Role createRole(Role role) {
		execute("CREATE USER " + account(role) + " IDENTIFIED BY '" + role.password() + "'");
		execute("GRANT ALL PRIVILEGES ON " + this.database.name() + ".* TO " + account(role));
		// The nodes of an application share its user, and may end each other's
		// statements: the doorbells of the daemon store (KILL QUERY) need it across
		// users.
		execute("GRANT CONNECTION ADMIN ON *.* TO " + account(role));
		return role;
	}

	@Override
	void grantExisting() {
		// The grant on the database covers every table in it.
	}

	@Override
	String leaseSql(TablePrefix tables) {
		// Times in the starter's MariaDB tables are UTC.
		return """
				SELECT holder, term, renewed_at, expires_at, UTC_TIMESTAMP(6)
				FROM %sleases WHERE group_name = ?
				""".formatted(tables.value());
	}

	@Override
	Instant instant(ResultSet row, int column) throws SQLException {
		return row.getObject(column, LocalDateTime.class).toInstant(ZoneOffset.UTC);
	}

	@Override
	boolean undefinedTable(SQLException ex) {
		return UNDEFINED_TABLE.equals(ex.getSQLState());
	}

	@Override
	int terminateSessions(String nodeId) {
		// By user, which is unique to this cluster's database: node ids repeat across
		// test classes and runs.
		try (Connection connection = dataSource().getConnection()) {
			List<Long> ids = new ArrayList<>();
			try (PreparedStatement statement = connection
				.prepareStatement("SELECT id FROM information_schema.PROCESSLIST WHERE user = ?")) {
				statement.setString(1, role(nodeId).name());
				try (ResultSet rows = statement.executeQuery()) {
					while (rows.next()) {
						ids.add(rows.getLong(1));
					}
				}
			}
			int killed = 0;
			try (Statement statement = connection.createStatement()) {
				for (long id : ids) {
					try {
						statement.execute("KILL CONNECTION " + id);
						killed++;
					}
					catch (SQLException ex) {
						// A session that ended since it was listed is not an error.
						if (ex.getErrorCode() != UNKNOWN_THREAD) {
							throw ex;
						}
					}
				}
			}
			return killed;
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not terminate the sessions of " + nodeId, ex);
		}
	}

	@Override
	void refuseConnections(String nodeId) {
		execute("ALTER USER " + account(role(nodeId)) + " ACCOUNT LOCK");
	}

	@Override
	void allowConnections(String nodeId) {
		execute("ALTER USER " + account(role(nodeId)) + " ACCOUNT UNLOCK");
	}

	@Override
	void dropDatabase() {
		this.database.drop();
	}

	@Override
	void dropRole(Role role) {
		execute("DROP USER IF EXISTS " + account(role));
	}

	private static String account(Role role) {
		return "'" + role.name() + "'@'%'";
	}

}
