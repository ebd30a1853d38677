package dev.leader.test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.jdbc.LeaderSchemaMigration;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.LeaseSettings;
import dev.leader.test.NodeProcess.Tenure;
import org.awaitility.core.ConditionTimeoutException;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import static org.awaitility.Awaitility.await;

/**
 * A cluster of {@link NodeProcess nodes} on a fresh schema, as a JUnit extension: register it with
 * {@code @RegisterExtension} on an instance field. Before each test it creates the schema and runs the starter's
 * migrations; after each test it kills every node it started, prints their events and standard error if the test
 * failed, and drops the schema and the nodes' roles.
 * <p>
 * Every node logs in with a database role of its own, and its sessions carry the node id as
 * {@code application_name}, so that database faults can hit one node alone: see {@link #terminateSessions} and
 * {@link #refuseConnections}. The cluster also reads the coordinator's view of the leases.
 */
public final class Cluster implements BeforeEachCallback, AfterEachCallback {

	private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(20);

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	private final LeaseSettings settings;

	private final Supplier<TestDatabase> schemas;

	private final List<String> groups;

	private final List<NodeProcess> nodes = new CopyOnWriteArrayList<>();

	private final AtomicInteger started = new AtomicInteger();

	private final Map<String, Role> roles = new ConcurrentHashMap<>();

	private @Nullable TestDatabase database;

	private @Nullable HikariDataSource dataSource;

	/**
	 * Creates a cluster whose nodes use the given settings and take part in the given groups.
	 * @param settings the settings of every node
	 * @param groups the groups
	 */
	public Cluster(LeaseSettings settings, String... groups) {
		this(settings, TestDatabase::createSchema, groups);
	}

	/**
	 * Creates a cluster on a database of the test's own, for example a {@link ReplicatedPostgres} pair; register its
	 * extension before this one, so that the servers run before the schema is created and until it is dropped.
	 * @param settings the settings of every node
	 * @param schemas creates the schema of each test
	 * @param groups the groups
	 */
	public Cluster(LeaseSettings settings, Supplier<TestDatabase> schemas, String... groups) {
		this.settings = settings;
		this.schemas = schemas;
		this.groups = List.of(groups);
	}

	@Override
	public void beforeEach(ExtensionContext context) {
		this.database = this.schemas.get();
		this.dataSource = this.database.dataSource(2);
		new LeaderSchemaMigration(this.dataSource, PREFIX).migrate();
	}

	@Override
	public void afterEach(ExtensionContext context) {
		cleanUp(() -> this.nodes.forEach(NodeProcess::close), () -> {
			if (context.getExecutionException().isPresent()) {
				this.nodes.forEach((node) -> System.err.println(node.describe()));
			}
			this.nodes.clear();
		}, () -> {
			if (this.database != null) {
				this.database.drop();
			}
		}, () -> {
			this.roles.values().forEach((role) -> execute("DROP ROLE IF EXISTS " + role.name()));
			this.roles.clear();
		}, () -> {
			if (this.dataSource != null) {
				this.dataSource.close();
			}
		});
	}

	/**
	 * Returns the settings of every node.
	 * @return the settings
	 */
	public LeaseSettings settings() {
		return this.settings;
	}

	/**
	 * Starts a node; it may not be ready yet.
	 * @param nodeId the node id
	 * @return the node
	 */
	public NodeProcess start(String nodeId) {
		return start(nodeId, TestNode.class, List.of(), Map.of());
	}

	/**
	 * Starts a node with another main class, see {@link NodeProcess#start(Class, String, List, Map, Path)}; it may
	 * not be ready yet.
	 * @param nodeId the node id
	 * @param main the main class
	 * @param extraArguments arguments added to the cluster's
	 * @return the node
	 */
	public NodeProcess start(String nodeId, Class<?> main, List<String> extraArguments) {
		return start(nodeId, main, extraArguments, Map.of());
	}

	/**
	 * Starts a {@link TestNode} with extra arguments and environment variables; it may not be ready yet.
	 * @param nodeId the node id
	 * @param extraArguments more {@link TestNode} arguments; they override the cluster's, {@code --url} for example
	 * @param environment variables added to the node's environment
	 * @return the node
	 */
	public NodeProcess start(String nodeId, List<String> extraArguments, Map<String, String> environment) {
		return start(nodeId, TestNode.class, extraArguments, environment);
	}

	/**
	 * Starts a node with a main class, extra arguments and environment variables; it may not be ready yet. A node id
	 * that was started before logs in with the same role again, so this also restarts a killed node.
	 * @param nodeId the node id
	 * @param main the main class, which takes the {@link TestNode} arguments
	 * @param extraArguments arguments added to the cluster's; they override them, {@code --url} for example
	 * @param environment variables added to the node's environment
	 * @return the node
	 */
	public NodeProcess start(String nodeId, Class<?> main, List<String> extraArguments,
			Map<String, String> environment) {
		TestDatabase database = database();
		int count = this.started.incrementAndGet();
		Role role = this.roles.computeIfAbsent(nodeId, (id) -> createRole(database.schema() + "_n" + count));
		List<String> arguments = new ArrayList<>(TestNode.arguments(this.settings));
		arguments.add("--url=" + database.url());
		arguments.add("--user=" + role.name());
		arguments.add("--password=" + role.password());
		arguments.add("--groups=" + String.join(",", this.groups));
		arguments.addAll(extraArguments);
		Path stderr = Path.of("target", "node-logs", database.schema(), nodeId + "-" + count + ".log");
		try {
			NodeProcess node = NodeProcess.start(main, nodeId, arguments, environment, stderr);
			this.nodes.add(node);
			return node;
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not start node " + nodeId, ex);
		}
	}

	/**
	 * Starts nodes and waits until every one of them is ready and has seen every one of them join, so that each
	 * node also notices when another one leaves.
	 * @param nodeIds the node ids
	 * @return the nodes, in the given order
	 */
	public List<NodeProcess> startAll(String... nodeIds) {
		List<NodeProcess> started = new ArrayList<>();
		for (String nodeId : nodeIds) {
			started.add(start(nodeId));
		}
		started.forEach((node) -> node.awaitReady(STARTUP_TIMEOUT));
		for (NodeProcess node : started) {
			for (String member : nodeIds) {
				node.awaitEvent("JOINED " + member,
						(event) -> event.type() == NodeEvent.Type.JOINED && member.equals(event.node()), STARTUP_TIMEOUT);
			}
		}
		return started;
	}

	/**
	 * Returns the JDBC URL of the test's schema, as the nodes use it.
	 * @return the URL
	 */
	public String url() {
		return database().url();
	}

	/**
	 * Returns every node started in this test, running or not.
	 * @return the nodes
	 */
	public List<NodeProcess> nodes() {
		return List.copyOf(this.nodes);
	}

	/**
	 * Returns the running nodes that believe they lead the group.
	 * @param group the group
	 * @return the leaders, normally one at most
	 * @see NodeProcess#isLeader(String)
	 */
	public List<NodeProcess> leaders(String group) {
		return this.nodes.stream().filter((node) -> node.isLeader(group)).toList();
	}

	/**
	 * Waits until exactly one running node believes it leads the group and the coordinator agrees.
	 * @param group the group
	 * @param timeout how long to wait at most
	 * @return the leader
	 */
	public NodeProcess awaitSingleLeader(String group, Duration timeout) {
		// The leader seen by the condition: asking again afterwards could find none, if it lost the lease meanwhile.
		AtomicReference<NodeProcess> leader = new AtomicReference<>();
		try {
			await().atMost(timeout).pollInterval(Duration.ofMillis(10)).until(() -> {
				List<NodeProcess> leaders = leaders(group);
				boolean single = leaders.size() == 1 && lease(group).filter(Lease::isHeld)
					.map((lease) -> lease.holder().equals(leaders.get(0).nodeId()))
					.orElse(false);
				leader.set(single ? leaders.get(0) : null);
				return single;
			});
		}
		catch (ConditionTimeoutException ex) {
			throw new AssertionError("No single leader of " + group + " within " + timeout + ": leaders "
					+ leaders(group).stream().map(NodeProcess::nodeId).toList() + ", lease " + lease(group), ex);
		}
		return leader.get();
	}

	/**
	 * Waits until some node prints a grant of the group with a term above the given one.
	 * @param group the group
	 * @param termAbove the term the grant must exceed
	 * @param timeout how long to wait at most
	 * @return the first such grant
	 */
	public NodeEvent awaitGrant(String group, long termAbove, Duration timeout) {
		try {
			return await().atMost(timeout)
				.pollDelay(Duration.ZERO)
				.pollInterval(Duration.ofMillis(5))
				.until(() -> this.nodes.stream()
					.flatMap((node) -> node
						.firstEvent((event) -> event.is(NodeEvent.Type.GRANTED, group) && event.term() > termAbove)
						.stream())
					.min(Comparator.comparingLong(NodeEvent::nanoTime)), Optional::isPresent)
				.orElseThrow();
		}
		catch (ConditionTimeoutException ex) {
			StringBuilder message = new StringBuilder("No node was granted " + group + " with a term above "
					+ termAbove + " within " + timeout + "\n");
			this.nodes.forEach((node) -> message.append(node.describe()));
			throw new AssertionError(message.toString(), ex);
		}
	}

	/**
	 * Returns every node's tenures of a group, checking G6 and the terms on the way: every revoke a node printed
	 * ends a grant of the same term, and a tenure that began later has a higher term.
	 * @param group the group
	 * @return the tenures, in the order they began
	 */
	public List<Tenure> tenures(String group) {
		List<Tenure> tenures = this.nodes.stream()
			.flatMap((node) -> node.tenures(group).stream())
			.sorted(Comparator.comparingLong(Tenure::grantedAt))
			.toList();
		for (int i = 1; i < tenures.size(); i++) {
			if (tenures.get(i).term() <= tenures.get(i - 1).term()) {
				throw new AssertionError(
						"Term of " + group + " did not rise: " + tenures.get(i - 1) + " then " + tenures.get(i));
			}
		}
		return tenures;
	}

	/**
	 * Checks the {@link #tenures} of a group, and that no two nodes believed they led it at the same instant (G1 and
	 * G2), as far as the times at which they printed their grants and revokes tell.
	 * @param group the group
	 * @return the tenures, in the order they began
	 */
	public List<Tenure> assertTenuresDoNotOverlap(String group) {
		List<Tenure> tenures = tenures(group);
		for (int i = 1; i < tenures.size(); i++) {
			if (tenures.get(i - 1).overlaps(tenures.get(i))) {
				throw new AssertionError(
						"Two leaders of " + group + " at once: " + tenures.get(i - 1) + " and " + tenures.get(i));
			}
		}
		return tenures;
	}

	/**
	 * Reads a group's lease from the coordinator.
	 * @param group the group
	 * @return the lease, or empty if the group has none yet
	 */
	public Optional<Lease> lease(String group) {
		String sql = """
				SELECT holder, term, renewed_at, expires_at, clock_timestamp()
				FROM %sleases WHERE group_name = ?
				""".formatted(PREFIX.value());
		try (Connection connection = dataSource().getConnection();
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
			throw new IllegalStateException("Could not read the lease of " + group, ex);
		}
	}

	/**
	 * Terminates every database session of a node with {@code pg_terminate_backend}.
	 * @param nodeId the node
	 * @return how many sessions were terminated
	 */
	public int terminateSessions(String nodeId) {
		String sql = """
				SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
				FROM pg_stat_activity WHERE usename = ?
				""";
		// By role, which is unique to this cluster's schema: node ids repeat across test classes and runs.
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

	/**
	 * Makes the database refuse new sessions of a node, until {@link #allowConnections}. Sessions it has open
	 * stay open; {@link #terminateSessions} ends them.
	 * @param nodeId the node
	 */
	public void refuseConnections(String nodeId) {
		execute("ALTER ROLE " + role(nodeId).name() + " NOLOGIN");
	}

	/**
	 * Lets a node open sessions again after {@link #refuseConnections}.
	 * @param nodeId the node
	 */
	public void allowConnections(String nodeId) {
		execute("ALTER ROLE " + role(nodeId).name() + " LOGIN");
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
		String schema = database().schema();
		execute("CREATE ROLE " + role.name() + " LOGIN PASSWORD '" + role.password() + "'");
		execute("GRANT USAGE ON SCHEMA " + schema + " TO " + role.name());
		execute("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA " + schema + " TO " + role.name());
		execute("GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA " + schema + " TO " + role.name());
		return role;
	}

	private void execute(String sql) {
		try (Connection connection = dataSource().getConnection(); Statement statement = connection.createStatement()) {
			statement.execute(sql);
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not execute " + sql, ex);
		}
	}

	private TestDatabase database() {
		if (this.database == null) {
			throw new IllegalStateException("Cluster is not set up; register it with @RegisterExtension");
		}
		return this.database;
	}

	/**
	 * Returns the test's own pool on the schema, with the schema owner's rights: for tables that the test creates
	 * before it starts nodes (every node role may use the tables and sequences that exist when it is first started),
	 * and for reading them back.
	 * @return the data source
	 */
	public HikariDataSource dataSource() {
		if (this.dataSource == null) {
			throw new IllegalStateException("Cluster is not set up; register it with @RegisterExtension");
		}
		return this.dataSource;
	}

	/**
	 * Runs every step even when one fails, then throws the first failure with the later ones suppressed.
	 */
	private static void cleanUp(Runnable... steps) {
		RuntimeException failure = null;
		for (Runnable step : steps) {
			try {
				step.run();
			}
			catch (RuntimeException ex) {
				if (failure == null) {
					failure = ex;
				}
				else {
					failure.addSuppressed(ex);
				}
			}
		}
		if (failure != null) {
			throw failure;
		}
	}

	private static Instant instant(ResultSet row, int column) throws SQLException {
		return row.getObject(column, OffsetDateTime.class).toInstant();
	}

	/**
	 * The database role a node logs in with; the name is generated, so it needs no quoting.
	 */
	private record Role(String name, String password) {
	}

	/**
	 * A group's lease as the coordinator holds it.
	 *
	 * @param group the group
	 * @param holder the holder, {@code null} after a release
	 * @param term the term
	 * @param renewedAt when it was last acquired or renewed, in database time
	 * @param expiresAt when it expires, in database time
	 * @param databaseNow the database's clock when it was read
	 * @param readAt the local {@link System#nanoTime()} just after it was read
	 */
	public record Lease(String group, @Nullable String holder, long term, Instant renewedAt, Instant expiresAt,
			Instant databaseNow, long readAt) {

		/**
		 * Returns whether the lease had a holder and had not expired when it was read.
		 * @return whether it is held
		 */
		public boolean isHeld() {
			return this.holder != null && this.expiresAt.isAfter(this.databaseNow);
		}

		/**
		 * Converts a database instant near the read into local {@link System#nanoTime()}. The result is never
		 * earlier than the true local time of that instant, and late by at most the read's round trip, because the
		 * database and the monotonic clock of one machine run at the same rate.
		 * @param instant the database instant
		 * @return the local time
		 */
		public long toNanoTime(Instant instant) {
			return this.readAt - Duration.between(instant, this.databaseNow).toNanos();
		}

	}

}
