package dev.leader.test;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.LeaseState;
import dev.leader.test.NodeProcess.Tenure;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A cluster of nodes, each a JVM of its own, on a fresh schema, as a JUnit extension:
 * register it with {@code @RegisterExtension} on an instance field. Before each test it
 * creates the schema (and, for the starter's own test nodes, its tables; the
 * application's nodes run their migrations themselves); after each test it kills every
 * node it started, prints their events and output if the test failed, and drops the
 * schema and the nodes' roles. The clusters of this class's factories run on PostgreSQL;
 * the starter's own test nodes also run on a fresh MariaDB database.
 * <p>
 * {@link #of(Class)} makes a cluster of the application's own Spring Boot nodes: each
 * node runs the application's main class, on the test's class path, with
 * {@code spring.datasource.*} and {@code leader.node.id} set for it and
 * {@code server.port=0}, and prints a {@link NodeEvent} line for every leadership and
 * membership event, which {@link NodeProcess} reads; see {@link #withProperty}. Since the
 * nodes run on the test class path, DevTools restarts and Docker Compose support are off
 * in them ({@code spring.devtools.restart.enabled} and
 * {@code spring.docker.compose.enabled} are {@code false}, as system properties). For
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
 * Nodes start with {@link #startAll}, which waits until they are ready, or one at a time
 * with {@link #start(String)}, which does not wait; {@link #start(String, Map, Map)}
 * gives a node properties and environment variables of its own, and
 * {@link #start(String, Class, Map, Map)} another main class. Every wait of the cluster
 * fails as soon as the nodes it waits on have exited, rather than at its timeout.
 * <p>
 * The faults: {@link NodeProcess#sigstop()} and {@link NodeProcess#sigcont()} pause and
 * resume a node, {@link NodeProcess#kill9()} kills it and {@link NodeProcess#sigterm()}
 * stops it gracefully; {@link #start} a node id again to restart it.
 * {@link #terminateSessions} ends a node's database sessions and
 * {@link #refuseConnections} refuses new ones: every node logs in with a database role of
 * its own, and every session sets the cluster's shared role, which owns what the nodes
 * create, so the nodes share their tables while database faults hit one node alone (on
 * MariaDB, every node's user may use the whole test database). {@link #stallNetwork}
 * stalls the connections of an application node, which reaches the database through a
 * {@link StallingProxy} of its own; {@link #clockOffset} runs a node with its wall clock
 * off, under libfaketime. The cluster also reads the coordinator's view of the leases
 * ({@link #lease}).
 * <p>
 * Not for parallel tests: one test at a time uses a cluster.
 * <p>
 * The work is done by package-private helpers: {@link ClusterNodes} for the nodes'
 * processes, {@link ClusterScope} for each test's database and clean-up,
 * {@link ClusterDatabase} for the schema and the roles, and {@link ClusterLeadership} for
 * reading who leads.
 */
public final class Cluster implements BeforeEachCallback, AfterEachCallback {

	private final NodeLauncher launcher;

	private final Map<String, String> properties = new LinkedHashMap<>();

	private final ClusterNodes nodes;

	private final ClusterLeadership leadership;

	private final ClusterScope scope;

	private @Nullable Supplier<? extends CoordinationStore> coordinator;

	Cluster(NodeLauncher launcher, Supplier<? extends ClusterDatabase> databases) {
		this.launcher = launcher;
		this.nodes = new ClusterNodes(launcher, this.properties);
		this.scope = new ClusterScope(databases, this.nodes);
		this.leadership = new ClusterLeadership(this.nodes.all(), this::holder);
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
	 * Creates a cluster of the application's nodes on a database of the test's own, such
	 * as a {@link ReplicatedPostgres} pair ({@code servers::createSchema}); register that
	 * database's extension, if it is one, before this one, so that the server runs before
	 * the schema is created and until it is dropped.
	 * @param application the application's main class
	 * @param schemas creates the schema of each test
	 * @return the cluster
	 */
	public static Cluster of(Class<?> application, Supplier<TestDatabase> schemas) {
		return new Cluster(NodeLauncher.application(application), () -> new PostgresClusterDatabase(schemas.get()));
	}

	/**
	 * Sets a property of every node started from now on, as a command-line argument
	 * {@code --name=value}: for an application cluster, a Spring Boot property, which
	 * overrides the application's own configuration. A property given to
	 * {@link #start(String, Map, Map)} overrides it for that node.
	 * @param name the property name, for example {@code leader.lease.duration}
	 * @param value the value
	 * @return this cluster
	 */
	public Cluster withProperty(String name, String value) {
		this.properties.put(name, value);
		return this;
	}

	/**
	 * Makes the cluster ask another coordination store than the database who holds a
	 * lease, for nodes that coordinate elsewhere: an {@code EtcdCoordinationStore} on the
	 * etcd cluster they use, for example. {@link #lease} still reads the database.
	 * @param coordinator supplies the store, when a wait first asks it; the cluster does
	 * not close it
	 * @return this cluster
	 */
	public Cluster withLeasesFrom(Supplier<? extends CoordinationStore> coordinator) {
		this.coordinator = coordinator;
		return this;
	}

	/**
	 * Returns the environment that makes a node's wall clock run the given offset off the
	 * machine's, through Debian's libfaketime, for {@link #start(String, Map, Map)}. The
	 * monotonic clock stays real: the engine's safe window runs on it, and the database's
	 * clock decides expiry.
	 * @param offset how far ahead (or behind, if negative) the node's wall clock is, in
	 * whole seconds
	 * @return the environment variables
	 * @throws AssertionError if libfaketime is not installed, with the command that
	 * installs it
	 */
	public static Map<String, String> clockOffset(Duration offset) {
		return FakeClock.environment(offset);
	}

	@Override
	public void beforeEach(ExtensionContext context) {
		this.scope.begin(this.launcher.createsTables() ? prefix() : null);
	}

	@Override
	public void afterEach(ExtensionContext context) {
		this.scope.end(context.getExecutionException().isPresent());
	}

	/**
	 * Starts a node with the cluster's properties; it may not be ready yet. A node id
	 * that was started before logs in with the same role again, so this also restarts a
	 * killed node.
	 * @param nodeId the node id
	 * @return the node
	 */
	public NodeProcess start(String nodeId) {
		return start(nodeId, this.launcher.main(), Map.of(), Map.of());
	}

	/**
	 * Starts a node with properties and environment variables of its own; it may not be
	 * ready yet. A node id that was started before logs in with the same role again, so
	 * this also restarts a killed node. For example, a node whose wall clock runs five
	 * seconds ahead, with a setting of its own: <pre class="code">
	 * cluster.start("node-c", Map.of("leader.follower-reads.unservable", "reject"),
	 *         Cluster.clockOffset(Duration.ofSeconds(5)));
	 * </pre>
	 * @param nodeId the node id
	 * @param properties properties of this node, given to it as command-line arguments
	 * {@code --name=value}: they override the cluster's ({@link #withProperty}) and the
	 * database and node id the cluster gives it; empty for none
	 * @param environment variables added to the node's environment (which is otherwise
	 * the test JVM's), for example {@link #clockOffset}; empty for none
	 * @return the node
	 */
	public NodeProcess start(String nodeId, Map<String, String> properties, Map<String, String> environment) {
		return start(nodeId, this.launcher.main(), properties, environment);
	}

	/**
	 * Starts a node that runs another main class than the cluster's, with properties and
	 * environment variables of its own; it may not be ready yet. The main class takes the
	 * same arguments as the cluster's: for an application cluster, a Spring Boot
	 * application on the same database, for example a second version of the application.
	 * @param nodeId the node id
	 * @param main the main class
	 * @param properties properties of this node, as for {@link #start(String, Map, Map)};
	 * empty for none
	 * @param environment variables added to the node's environment; empty for none
	 * @return the node
	 */
	public NodeProcess start(String nodeId, Class<?> main, Map<String, String> properties,
			Map<String, String> environment) {
		return this.nodes.start(database(), nodeId, main, properties, environment);
	}

	/**
	 * Starts nodes with the cluster's properties and waits until every one of them is
	 * ready and has seen every one of them join, so that each node also notices when
	 * another one leaves.
	 * @param nodeIds the node ids
	 * @return the nodes, in the given order
	 * @throws AssertionError if they are not all ready and joined within the startup
	 * timeout (90 s for an application), or as soon as one of them has exited, with its
	 * exit code, events and last lines of output
	 */
	public List<NodeProcess> startAll(String... nodeIds) {
		List<NodeProcess> started = new ArrayList<>();
		for (String nodeId : nodeIds) {
			started.add(start(nodeId));
		}
		this.nodes.awaitJoined(started);
		return started;
	}

	/**
	 * Stalls the network between a node and the database for a while, from now; returns
	 * at once. Only nodes of an {@linkplain #of(Class) application cluster} on a
	 * single-host URL go through a proxy: on a multi-host URL (a
	 * {@link ReplicatedPostgres} pair) they reach the servers directly.
	 * @param nodeId the node
	 * @param duration how long nothing goes through in either direction
	 * @see StallingProxy#stall(Duration)
	 */
	public void stallNetwork(String nodeId, Duration duration) {
		this.nodes.stallNetwork(nodeId, duration);
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
		return List.copyOf(this.nodes.all());
	}

	/**
	 * Returns the running nodes that believe they lead the group.
	 * @param group the group
	 * @return the leaders, normally one at most
	 * @see NodeProcess#isLeader(String)
	 */
	public List<NodeProcess> leaders(String group) {
		return this.leadership.leaders(group);
	}

	/**
	 * Waits until exactly one running node believes it leads the group and the
	 * coordinator agrees.
	 * @param group the group
	 * @param timeout how long to wait at most
	 * @return the leader
	 * @throws AssertionError after the timeout, or as soon as every node started in the
	 * test has exited (a node that fails at startup, for example), with the nodes' exit
	 * codes, events and last lines of output
	 */
	public NodeProcess awaitSingleLeader(String group, Duration timeout) {
		return this.leadership.awaitSingleLeader(group, timeout);
	}

	/**
	 * Waits until some node prints a grant of the group with a term above the given one.
	 * @param group the group
	 * @param termAbove the term the grant must exceed
	 * @param timeout how long to wait at most
	 * @return the first such grant
	 * @throws AssertionError after the timeout, or as soon as every node started in the
	 * test has exited, with the nodes' exit codes, events and last lines of output
	 */
	public NodeEvent awaitGrant(String group, long termAbove, Duration timeout) {
		return this.leadership.awaitGrant(group, termAbove, timeout);
	}

	/**
	 * Returns every node's tenures of a group, checking G6 and the terms on the way:
	 * every revoke a node printed ends a grant of the same term, and a tenure that began
	 * later has a higher term.
	 * @param group the group
	 * @return the tenures, in the order they began
	 */
	public List<Tenure> tenures(String group) {
		return this.leadership.tenures(group);
	}

	/**
	 * Checks the {@link #tenures} of a group, and that no two nodes believed they led it
	 * at the same instant (G1 and G2), as far as the times at which they printed their
	 * grants and revokes tell.
	 * @param group the group
	 * @return the tenures, in the order they began
	 */
	public List<Tenure> assertTenuresDoNotOverlap(String group) {
		return this.leadership.assertTenuresDoNotOverlap(group);
	}

	/**
	 * Reads a group's lease from the coordinator.
	 * @param group the group
	 * @return the lease, or empty if the group has none yet, or no node has created the
	 * starter's tables
	 */
	public Optional<Lease> lease(String group) {
		return database().lease(prefix(), group);
	}

	/**
	 * Terminates every database session of a node: with {@code pg_terminate_backend} on
	 * PostgreSQL, {@code KILL CONNECTION} on MariaDB.
	 * @param nodeId the node
	 * @return how many sessions were terminated
	 */
	public int terminateSessions(String nodeId) {
		return database().terminateSessions(nodeId);
	}

	/**
	 * Makes the database refuse new sessions of a node, until {@link #allowConnections}.
	 * Sessions it has open stay open; {@link #terminateSessions} ends them.
	 * @param nodeId the node
	 */
	public void refuseConnections(String nodeId) {
		database().refuseConnections(nodeId);
	}

	/**
	 * Lets a node open sessions again after {@link #refuseConnections}.
	 * @param nodeId the node
	 */
	public void allowConnections(String nodeId) {
		database().allowConnections(nodeId);
	}

	private Optional<String> holder(String group) {
		Supplier<? extends CoordinationStore> coordinator = this.coordinator;
		if (coordinator == null) {
			return lease(group).filter(Lease::isHeld).map(Lease::holder);
		}
		return coordinator.get()
			.leases()
			.stream()
			.filter((lease) -> lease.group().equals(group) && lease.isHeld())
			.map(LeaseState::holder)
			.findFirst();
	}

	private TablePrefix prefix() {
		return new TablePrefix(this.properties.getOrDefault("leader.jdbc.table-prefix", "leader_"));
	}

	private ClusterDatabase database() {
		return this.scope.database();
	}

	/**
	 * Returns the test's own pool on the schema, with the schema owner's rights: for
	 * tables that the test creates before it starts nodes (every node role may use the
	 * tables and sequences that exist when it is first started), and for reading them
	 * back.
	 * @return the data source
	 */
	public HikariDataSource dataSource() {
		return database().dataSource();
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

}
