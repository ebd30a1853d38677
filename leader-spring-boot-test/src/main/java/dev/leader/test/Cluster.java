package dev.leader.test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
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
import java.util.LinkedHashMap;
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
import dev.leader.test.NodeProcess.Tenure;
import org.awaitility.core.ConditionTimeoutException;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import static org.awaitility.Awaitility.await;

/**
 * A cluster of nodes, each a JVM of its own, on a fresh schema, as a JUnit extension:
 * register it with {@code @RegisterExtension} on an instance field. Before each test it
 * creates the schema (and, for the starter's own test nodes, its tables; the
 * application's nodes run their migrations themselves); after each test it kills every
 * node it started, prints their events and output if the test failed, and drops the
 * schema and the nodes' roles.
 * <p>
 * {@link #of(Class)} makes a cluster of the application's own Spring Boot nodes: each
 * node runs the application's main class, on the test's class path, with
 * {@code spring.datasource.*} and {@code leader.node.id} set for it and
 * {@code server.port=0}, and prints a {@link NodeEvent} line for every leadership and
 * membership event, which {@link NodeProcess} reads; see {@link #withProperty}. For
 * example: <pre class="code">
 * &#64;RegisterExtension
 * final Cluster cluster = Cluster.of(MyApplication.class).withProperty("leader.groups", "billing");
 *
 * &#64;Test
 * void followerTakesOverAfterTheLeaderIsKilled() {
 *     this.cluster.startAll("a", "b", "c");
 *     NodeProcess leader = this.cluster.awaitSingleLeader("billing", Duration.ofSeconds(30));
 *     NodeEvent granted = leader.lastEvent((event) -&gt; event.is(NodeEvent.Type.GRANTED, "billing")).orElseThrow();
 *     leader.kill9();
 *     this.cluster.awaitGrant("billing", granted.term(), Duration.ofSeconds(30));
 * }
 * </pre>
 * <p>
 * The faults: {@link NodeProcess#sigstop()} and {@link NodeProcess#sigcont()} pause and
 * resume a node, {@link NodeProcess#kill9()} kills it and {@link NodeProcess#sigterm()}
 * stops it gracefully; {@link #start} a node id again to restart it.
 * {@link #terminateSessions} ends a node's database sessions and
 * {@link #refuseConnections} refuses new ones: every node logs in with a database role of
 * its own, and every session sets the cluster's shared role, which owns what the nodes
 * create, so the nodes share their tables while database faults hit one node alone.
 * {@link #stallNetwork} stalls the connections of an application node, which reaches the
 * database through a {@link StallingProxy} of its own; {@link #clockOffset} runs a node
 * with its wall clock off, under libfaketime. The cluster also reads the coordinator's
 * view of the leases ({@link #lease}).
 * <p>
 * Not for parallel tests: one test at a time uses a cluster.
 */
public final class Cluster implements BeforeEachCallback, AfterEachCallback {

	private static final String UNDEFINED_TABLE = "42P01";

	private static final Path LIBFAKETIME = Path.of("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1");

	private final Launcher launcher;

	private final Supplier<TestDatabase> schemas;

	private final Map<String, String> properties = new LinkedHashMap<>();

	private final List<NodeProcess> nodes = new CopyOnWriteArrayList<>();

	private final AtomicInteger started = new AtomicInteger();

	private final Map<String, Role> roles = new ConcurrentHashMap<>();

	private final Map<String, StallingProxy> proxies = new ConcurrentHashMap<>();

	private @Nullable TestDatabase database;

	private @Nullable HikariDataSource dataSource;

	private @Nullable String sharedRole;

	Cluster(Launcher launcher, Supplier<TestDatabase> schemas) {
		this.launcher = launcher;
		this.schemas = schemas;
	}

	/**
	 * Creates a cluster of the application's nodes on a fresh schema of the
	 * {@link TestDatabase}.
	 * @param application the application's main class: a class with a {@code main} method
	 * that runs a {@link org.springframework.boot.SpringApplication}
	 * @return the cluster
	 */
	public static Cluster of(Class<?> application) {
		return of(application, TestDatabase::createSchema);
	}

	/**
	 * Creates a cluster of the application's nodes on a database of the test's own;
	 * register that database's extension, if it is one, before this one, so that the
	 * server runs before the schema is created and until it is dropped.
	 * @param application the application's main class
	 * @param schemas creates the schema of each test
	 * @return the cluster
	 */
	public static Cluster of(Class<?> application, Supplier<TestDatabase> schemas) {
		return new Cluster(new ApplicationLauncher(application), schemas);
	}

	/**
	 * Sets a property of every node started from now on, as a command-line argument
	 * {@code --name=value}: for an application cluster, a Spring Boot property, which
	 * overrides the application's own configuration. A property given to
	 * {@link #start(String, Map)} overrides it for that node.
	 * @param name the property name, for example {@code leader.lease.duration}
	 * @param value the value
	 * @return this cluster
	 */
	public Cluster withProperty(String name, String value) {
		this.properties.put(name, value);
		return this;
	}

	/**
	 * Returns the environment that makes a node's wall clock run the given offset off the
	 * machine's, through Debian's libfaketime, for {@link #start(String, List, Map)}. The
	 * monotonic clock stays real: the engine's safe window runs on it, and the database's
	 * clock decides expiry.
	 * @param offset how far ahead (or behind, if negative) the node's wall clock is, in
	 * whole seconds
	 * @return the environment variables
	 * @throws AssertionError if libfaketime is not installed, with the command that
	 * installs it
	 */
	public static Map<String, String> clockOffset(Duration offset) {
		if (!Files.isReadable(LIBFAKETIME)) {
			throw new AssertionError("libfaketime is missing (" + LIBFAKETIME + "): a node with its wall clock off "
					+ "needs Debian's faketime package. Install it with 'apt-get install faketime'");
		}
		String seconds = ((offset.isNegative()) ? "-" : "+") + offset.abs().toSeconds() + "s";
		// libfaketime's "monotonic fix" would freeze CLOCK_MONOTONIC readers such as the
		// JVM's timed waits.
		return Map.of("LD_PRELOAD", LIBFAKETIME.toString(), "FAKETIME", seconds, "FAKETIME_DONT_FAKE_MONOTONIC", "1",
				"FAKETIME_FORCE_MONOTONIC_FIX", "0");
	}

	@Override
	public void beforeEach(ExtensionContext context) {
		this.database = this.schemas.get();
		this.dataSource = this.database.dataSource(2);
		if (this.launcher.createsTables()) {
			new LeaderSchemaMigration(this.dataSource, prefix()).migrate();
		}
		// Nodes create tables, such as the application's migrations, as this role, so
		// that every node may use them.
		this.sharedRole = this.database.schema() + "_nodes";
		execute("CREATE ROLE " + this.sharedRole + " NOLOGIN");
		execute("GRANT USAGE, CREATE ON SCHEMA " + this.database.schema() + " TO " + this.sharedRole);
	}

	@Override
	public void afterEach(ExtensionContext context) {
		cleanUp(() -> this.nodes.forEach(NodeProcess::close), () -> {
			if (context.getExecutionException().isPresent()) {
				this.nodes.forEach((node) -> System.err.println(node.describe()));
			}
			this.nodes.clear();
		}, () -> {
			this.proxies.values().forEach(StallingProxy::close);
			this.proxies.clear();
		}, () -> {
			if (this.database != null) {
				this.database.drop();
			}
		}, () -> {
			this.roles.values().forEach((role) -> execute("DROP ROLE IF EXISTS " + role.name()));
			this.roles.clear();
			if (this.sharedRole != null) {
				execute("DROP ROLE IF EXISTS " + this.sharedRole);
				this.sharedRole = null;
			}
		}, () -> {
			if (this.dataSource != null) {
				this.dataSource.close();
			}
		});
	}

	/**
	 * Starts a node; it may not be ready yet. A node id that was started before logs in
	 * with the same role again, so this also restarts a killed node.
	 * @param nodeId the node id
	 * @return the node
	 */
	public NodeProcess start(String nodeId) {
		return start(nodeId, this.launcher.main(), List.of(), Map.of());
	}

	/**
	 * Starts a node with properties of its own; it may not be ready yet.
	 * @param nodeId the node id
	 * @param properties properties that override the cluster's for this node, see
	 * {@link #withProperty}
	 * @return the node
	 */
	public NodeProcess start(String nodeId, Map<String, String> properties) {
		return start(nodeId, this.launcher.main(), arguments(properties), Map.of());
	}

	/**
	 * Starts a node with another main class; it may not be ready yet.
	 * @param nodeId the node id
	 * @param main the main class, which takes the same arguments as the cluster's
	 * @param extraArguments arguments added to the cluster's; they override them
	 * @return the node
	 */
	public NodeProcess start(String nodeId, Class<?> main, List<String> extraArguments) {
		return start(nodeId, main, extraArguments, Map.of());
	}

	/**
	 * Starts a node with extra arguments and environment variables; it may not be ready
	 * yet.
	 * @param nodeId the node id
	 * @param extraArguments arguments {@code --name=value} added to the cluster's; they
	 * override them
	 * @param environment variables added to the node's environment, for example
	 * {@link #clockOffset}
	 * @return the node
	 */
	public NodeProcess start(String nodeId, List<String> extraArguments, Map<String, String> environment) {
		return start(nodeId, this.launcher.main(), extraArguments, environment);
	}

	/**
	 * Starts a node with a main class, extra arguments and environment variables; it may
	 * not be ready yet. A node id that was started before logs in with the same role
	 * again, so this also restarts a killed node.
	 * @param nodeId the node id
	 * @param main the main class, which takes the same arguments as the cluster's
	 * @param extraArguments arguments added to the cluster's; they override them
	 * @param environment variables added to the node's environment
	 * @return the node
	 */
	public NodeProcess start(String nodeId, Class<?> main, List<String> extraArguments,
			Map<String, String> environment) {
		TestDatabase database = database();
		int count = this.started.incrementAndGet();
		Role role = this.roles.computeIfAbsent(nodeId, (id) -> createRole(database.schema() + "_n" + count));
		// Tables the test created since the last start: every node may use them.
		execute("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA " + database.schema() + " TO "
				+ this.sharedRole);
		execute("GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA " + database.schema() + " TO " + this.sharedRole);
		String url = database.url();
		if (this.launcher.proxied()) {
			url = this.proxies.computeIfAbsent(nodeId, (id) -> StallingProxy.inFrontOf(id, database.url())).jdbcUrl();
		}
		List<String> arguments = new ArrayList<>(this.launcher.arguments(nodeId, url, role.name(), role.password()));
		arguments.addAll(arguments(this.properties));
		arguments.addAll(extraArguments);
		Path output = Path.of("target", "node-logs", database.schema(), nodeId + "-" + count + ".log");
		try {
			NodeProcess node = this.launcher.launch(main, nodeId, arguments, environment, output);
			this.nodes.add(node);
			return node;
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not start node " + nodeId, ex);
		}
	}

	/**
	 * Starts nodes and waits until every one of them is ready and has seen every one of
	 * them join, so that each node also notices when another one leaves.
	 * @param nodeIds the node ids
	 * @return the nodes, in the given order
	 */
	public List<NodeProcess> startAll(String... nodeIds) {
		List<NodeProcess> started = new ArrayList<>();
		for (String nodeId : nodeIds) {
			started.add(start(nodeId));
		}
		Duration timeout = this.launcher.startupTimeout();
		started.forEach((node) -> node.awaitReady(timeout));
		for (NodeProcess node : started) {
			for (String member : nodeIds) {
				node.awaitEvent("JOINED " + member,
						(event) -> event.type() == NodeEvent.Type.JOINED && member.equals(event.node()), timeout);
			}
		}
		return started;
	}

	/**
	 * Stalls the network between a node and the database for a while, from now; returns
	 * at once. Only nodes of an {@linkplain #of(Class) application cluster} go through a
	 * proxy.
	 * @param nodeId the node
	 * @param duration how long nothing goes through in either direction
	 * @see StallingProxy#stall(Duration)
	 */
	public void stallNetwork(String nodeId, Duration duration) {
		StallingProxy proxy = this.proxies.get(nodeId);
		if (proxy == null) {
			throw new IllegalArgumentException("Node " + nodeId + " was not started behind a proxy");
		}
		proxy.stall(duration);
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
	 * Waits until exactly one running node believes it leads the group and the
	 * coordinator agrees.
	 * @param group the group
	 * @param timeout how long to wait at most
	 * @return the leader
	 */
	public NodeProcess awaitSingleLeader(String group, Duration timeout) {
		// The leader seen by the condition: asking again afterwards could find none, if
		// it lost the lease meanwhile.
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
			throw new AssertionError(
					"No single leader of " + group + " within " + timeout + ": leaders "
							+ leaders(group).stream().map(NodeProcess::nodeId).toList() + ", lease " + lease(group),
					ex);
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
			StringBuilder message = new StringBuilder(
					"No node was granted " + group + " with a term above " + termAbove + " within " + timeout + "\n");
			this.nodes.forEach((node) -> message.append(node.describe()));
			throw new AssertionError(message.toString(), ex);
		}
	}

	/**
	 * Returns every node's tenures of a group, checking G6 and the terms on the way:
	 * every revoke a node printed ends a grant of the same term, and a tenure that began
	 * later has a higher term.
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
	 * Checks the {@link #tenures} of a group, and that no two nodes believed they led it
	 * at the same instant (G1 and G2), as far as the times at which they printed their
	 * grants and revokes tell.
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
	 * @return the lease, or empty if the group has none yet, or no node has created the
	 * starter's tables
	 */
	public Optional<Lease> lease(String group) {
		String sql = """
				SELECT holder, term, renewed_at, expires_at, clock_timestamp()
				FROM %sleases WHERE group_name = ?
				""".formatted(prefix().value());
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
			if (UNDEFINED_TABLE.equals(ex.getSQLState())) {
				// No node has created the starter's tables yet.
				return Optional.empty();
			}
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

	/**
	 * Makes the database refuse new sessions of a node, until {@link #allowConnections}.
	 * Sessions it has open stay open; {@link #terminateSessions} ends them.
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
		execute("CREATE ROLE " + role.name() + " LOGIN PASSWORD '" + role.password() + "' IN ROLE " + this.sharedRole);
		// Sessions take the shared role at once: what one node creates, the others may
		// use.
		execute("ALTER ROLE " + role.name() + " SET role = '" + this.sharedRole + "'");
		return role;
	}

	private TablePrefix prefix() {
		return new TablePrefix(this.properties.getOrDefault("leader.jdbc.table-prefix", "leader_"));
	}

	private static List<String> arguments(Map<String, String> properties) {
		List<String> arguments = new ArrayList<>();
		properties.forEach((name, value) -> arguments.add("--" + name + "=" + value));
		return arguments;
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
	 * Returns the test's own pool on the schema, with the schema owner's rights: for
	 * tables that the test creates before it starts nodes (every node role may use the
	 * tables and sequences that exist when it is first started), and for reading them
	 * back.
	 * @return the data source
	 */
	public HikariDataSource dataSource() {
		if (this.dataSource == null) {
			throw new IllegalStateException("Cluster is not set up; register it with @RegisterExtension");
		}
		return this.dataSource;
	}

	/**
	 * Runs every step even when one fails, then throws the first failure with the later
	 * ones suppressed.
	 * @param steps the steps, run in order
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
	 * The database role a node logs in with; the name is generated, so it needs no
	 * quoting.
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
		 * Converts a database instant near the read into local {@link System#nanoTime()}.
		 * The result is never earlier than the true local time of that instant, and late
		 * by at most the read's round trip, because the database and the monotonic clock
		 * of one machine run at the same rate.
		 * @param instant the database instant
		 * @return the local time
		 */
		public long toNanoTime(Instant instant) {
			return this.readAt - Duration.between(instant, this.databaseNow).toNanos();
		}

	}

	/**
	 * How the nodes of a cluster are started: their main class, their arguments, and
	 * their process.
	 */
	interface Launcher {

		/**
		 * Returns the main class of the nodes.
		 * @return the main class
		 */
		Class<?> main();

		/**
		 * Returns the arguments that give a node its id and its database.
		 * @param nodeId the node id
		 * @param url the JDBC URL
		 * @param user the database user
		 * @param password the password
		 * @return the arguments
		 */
		List<String> arguments(String nodeId, String url, String user, String password);

		/**
		 * Starts a node.
		 * @param main the main class
		 * @param nodeId the node id
		 * @param arguments the arguments, later ones overriding earlier ones
		 * @param environment variables added to the node's environment
		 * @param output the file that receives the node's output
		 * @return the running node
		 * @throws IOException if the process cannot be started
		 */
		NodeProcess launch(Class<?> main, String nodeId, List<String> arguments, Map<String, String> environment,
				Path output) throws IOException;

		/**
		 * Returns how long a node may take to be ready and to see the others join.
		 * @return the timeout
		 */
		Duration startupTimeout();

		/**
		 * Returns whether the cluster creates the starter's tables before the first node
		 * starts; if not, the nodes create them, as an application's migrations do.
		 * @return whether the cluster creates the tables
		 */
		boolean createsTables();

		/**
		 * Returns whether each node reaches the database through a {@link StallingProxy}
		 * of its own.
		 * @return whether nodes are proxied
		 */
		boolean proxied();

	}

}
