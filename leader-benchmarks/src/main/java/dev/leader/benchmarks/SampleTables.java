package dev.leader.benchmarks;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.jspecify.annotations.Nullable;

/**
 * What {@link SampleAppTimings} reads of the starter's tables, on a connection of the
 * harness's own to the benchmarks' database.
 */
final class SampleTables implements AutoCloseable {

	/**
	 * The sample's groups, {@code leader.groups}.
	 */
	private static final List<String> GROUPS = List.of("default", "billing");

	/**
	 * The number of the sample's daemons.
	 */
	private static final int DAEMONS = 2;

	private final Connection connection;

	private final Dialect dialect;

	/**
	 * Opens the connection.
	 * @param database the benchmarks' database
	 */
	SampleTables(BenchDatabase database) throws SQLException {
		this.connection = database.connect();
		this.dialect = database.dialect();
	}

	/**
	 * Returns whether the cluster is complete: the given number of live nodes, every
	 * group held, and with daemons each of them active.
	 * @param nodes the number of nodes that run
	 * @param daemons whether the nodes run daemons
	 * @return whether the cluster is complete
	 */
	boolean settled(int nodes, boolean daemons) throws SQLException {
		return queryLong("SELECT count(*) FROM leader_nodes") == nodes
				&& queryLong("SELECT count(*) FROM leader_leases l JOIN leader_nodes n "
						+ "ON n.node_id = l.holder WHERE l.expires_at > " + this.dialect.clock()) == GROUPS.size()
				&& (!daemons || queryLong("SELECT count(*) FROM leader_assignments a "
						+ "JOIN leader_nodes n ON n.node_id = a.node_id WHERE a.state = 'ACTIVE'") == DAEMONS);
	}

	@Nullable String holder(String group) throws SQLException {
		return queryString("SELECT holder FROM leader_leases WHERE group_name = '" + group + "'");
	}

	/**
	 * Returns the name of a group's leader, the node's {@code leader.node.name}.
	 * @param group the group
	 * @return the name, or {@code null} if no node holds the group
	 */
	@Nullable String leaderName(String group) throws SQLException {
		return queryString("SELECT name FROM leader_nodes n JOIN leader_leases l "
				+ "ON l.holder = n.node_id WHERE l.group_name = '" + group + "'");
	}

	long pid(@Nullable String nodeId) throws SQLException {
		return queryLong("SELECT pid FROM leader_nodes WHERE node_id = '" + nodeId + "'");
	}

	long term(String group) throws SQLException {
		return queryLong("SELECT term FROM leader_leases WHERE group_name = '" + group + "'");
	}

	/**
	 * Returns the groups a node holds, with their terms.
	 * @param nodeId the node
	 * @return the term of each group it holds, by group name
	 */
	Map<String, Long> termsHeldBy(@Nullable String nodeId) throws SQLException {
		Map<String, Long> held = new TreeMap<>();
		try (Statement statement = this.connection.createStatement();
				ResultSet rows = statement
					.executeQuery("SELECT group_name, term FROM leader_leases WHERE holder = '" + nodeId + "'")) {
			while (rows.next()) {
				held.put(rows.getString(1), rows.getLong(2));
			}
		}
		return held;
	}

	/**
	 * Returns how many daemons a node runs or is being given.
	 * @param nodeId the node
	 * @return the number of its assignments in {@code ASSIGNING} or {@code ACTIVE}
	 */
	long daemonsOn(@Nullable String nodeId) throws SQLException {
		return queryLong("SELECT count(*) FROM leader_assignments WHERE node_id = '" + nodeId
				+ "' AND state IN ('ASSIGNING', 'ACTIVE')");
	}

	/**
	 * Returns when a group's lease of the given term expires.
	 * @param group the group
	 * @param term the term its lease must still be of
	 * @return the lease's {@code expires_at}
	 * @throws IllegalStateException if the lease is of another term
	 */
	Instant expiry(String group, long term) throws SQLException {
		try (Statement statement = this.connection.createStatement();
				ResultSet row = statement
					.executeQuery("SELECT term, expires_at FROM leader_leases WHERE group_name = '" + group + "'")) {
			row.next();
			if (row.getLong(1) != term) {
				// A kill lost in a race with the end of a round: the failover would be
				// timed from the wrong lease.
				throw new IllegalStateException("The lease of " + group + " moved on before it expired");
			}
			return this.dialect.instant(row, 2);
		}
	}

	/**
	 * Reads the database clock, and the harness's monotonic clock around it, so that a
	 * moment of the harness can be placed on the database clock.
	 * @return the reading
	 */
	DatabaseClock readClock() throws SQLException {
		long sent = System.nanoTime();
		try (Statement statement = this.connection.createStatement();
				ResultSet row = statement.executeQuery("SELECT " + this.dialect.clock())) {
			row.next();
			Instant now = this.dialect.instant(row, 1);
			return new DatabaseClock(now, (sent + System.nanoTime()) / 2);
		}
	}

	/**
	 * Waits for a later term of every group a stopped leader held; polls seldom, after
	 * the leader exited, so that the polls take no core from the nodes during the
	 * hand-over.
	 * @param held the terms the stopped leader held, by group name
	 * @return the time each later term was acquired at, by group name
	 */
	Map<String, Instant> awaitGrants(Map<String, Long> held) throws Exception {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
		String sql = "SELECT group_name, term, acquired_at FROM leader_leases WHERE group_name IN ("
				+ String.join(", ", Collections.nCopies(held.size(), "?")) + ")";
		while (true) {
			Map<String, Instant> grants = new TreeMap<>();
			try (PreparedStatement statement = this.connection.prepareStatement(sql)) {
				int index = 0;
				for (String group : held.keySet()) {
					statement.setString(++index, group);
				}
				try (ResultSet rows = statement.executeQuery()) {
					while (rows.next()) {
						if (rows.getLong(2) > held.get(rows.getString(1))) {
							grants.put(rows.getString(1), this.dialect.instant(rows, 3));
						}
					}
				}
			}
			if (grants.size() == held.size()) {
				return grants;
			}
			if (System.nanoTime() - deadline > 0) {
				throw new IllegalStateException("No successor took " + held + " within 60 s");
			}
			TimeUnit.MILLISECONDS.sleep(50);
		}
	}

	private long queryLong(String sql) throws SQLException {
		try (Statement statement = this.connection.createStatement(); ResultSet row = statement.executeQuery(sql)) {
			return row.next() ? row.getLong(1) : -1;
		}
	}

	private @Nullable String queryString(String sql) throws SQLException {
		try (Statement statement = this.connection.createStatement(); ResultSet row = statement.executeQuery(sql)) {
			return row.next() ? row.getString(1) : null;
		}
	}

	@Override
	public void close() throws SQLException {
		this.connection.close();
	}

	/**
	 * The database clock as the harness read it: the server read its clock between sent
	 * and received, taken as their middle.
	 *
	 * @param databaseNow what the server read
	 * @param nanoTime the harness's monotonic clock at that moment
	 */
	record DatabaseClock(Instant databaseNow, long nanoTime) {

		Instant at(long nanoTime) {
			return this.databaseNow.plusNanos(nanoTime - this.nanoTime);
		}

	}

}
