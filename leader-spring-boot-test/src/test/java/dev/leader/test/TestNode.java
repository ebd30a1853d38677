package dev.leader.test;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Supplier;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.DaemonAgent;
import dev.leader.LeaderChangedEvent;
import dev.leader.LeadershipGrantedEvent;
import dev.leader.LeadershipRevokedEvent;
import dev.leader.NodeJoinedEvent;
import dev.leader.NodeLeftEvent;
import dev.leader.RevokeReason;
import dev.leader.daemon.DaemonCoordinator;
import dev.leader.daemon.DaemonSettings;
import dev.leader.etcd.EtcdCoordinationStore;
import dev.leader.etcd.EtcdMemberClients;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.LeaderEngine;
import dev.leader.lease.LeaseSettings;
import dev.leader.node.NodeRegistration;
import dev.leader.test.NodeEvent.Type;
import io.etcd.jetcd.Client;
import org.jspecify.annotations.Nullable;

/**
 * One cluster node in a process of its own: a {@link LeaderEngine} without a Spring
 * context, on a small Hikari pool whose PostgreSQL sessions carry the node id as
 * {@code application_name}. Started by {@link NodeProcess}. It runs on PostgreSQL or,
 * with a {@code jdbc:mariadb:} URL, on MariaDB, with that database's stores
 * ({@link NodeDialect}).
 * <p>
 * Standard output carries only {@link NodeEvent} lines, one per event; logging goes to
 * standard error. SIGTERM stops the engine gracefully (it releases its leases and prints
 * {@code REVOKED ... SHUTDOWN} and then {@code STOPPED}); SIGKILL does not. The node also
 * stops when the process that started it is gone, so that a crashed test run leaves no
 * nodes behind.
 * <p>
 * Arguments are {@code --name=value}, with durations in ISO-8601 ({@code PT0.5S}):
 * <ul>
 * <li>{@code url}, {@code user}, {@code password}: the database</li>
 * <li>{@code node}: the node id; {@code groups}: comma-separated group names</li>
 * <li>{@code crash-takeover} (none): comma-separated groups whose leases are bound to
 * their holder's session, see {@code leader.lease.crash-takeover-groups}</li>
 * <li>{@code lease}, {@code renew}, {@code retry}, {@code margin}, {@code node-expiry},
 * {@code yield-cooldown}: the {@link LeaseSettings}, by default its defaults</li>
 * <li>{@code table-prefix} ({@code leader_}), {@code query-timeout} (1 s),
 * {@code connection-timeout} (1 s), {@code pool-size} (3)</li>
 * <li>{@code writer} ({@code false}): whether the node makes fenced writes, see
 * {@link FencedWriter}, with {@code writer-table} ({@code fault_log}),
 * {@code writer-interval} (30 ms), {@code writer-max-attempts} (1,000,000),
 * {@code writer-fence} ({@code guard}, or {@code log} to fence each write with an append
 * to the group's decision log, or {@code fences} to advance the fence of a resource named
 * after the group, see {@code Fencing.advance}) and {@code incarnation} (1), a number
 * that tells the processes of one node id apart</li>
 * <li>{@code etcd} (none): comma-separated client URLs of etcd members; with it the node
 * coordinates through etcd ({@code EtcdCoordinationStore}, under {@code etcd-prefix}
 * ({@code leader}), each call waiting at most {@code etcd-timeout} (3 s)) and keeps only
 * the fences and the log tables in the database, so its writer needs
 * {@code writer-fence=fences}, and crash takeover, the load, the followed logs and the
 * daemons fail startup</li>
 * <li>{@code load-threads} (0): how many threads run guarded-write load while the node
 * leads, see {@link GuardedLoad}, with {@code load-table} ({@code fault_load}),
 * {@code load-hold} (100 ms), how long each transaction stays open after its guard, and
 * {@code load-max-transactions} (10,000,000); give the pool a connection per load thread
 * on top of the others</li>
 * <li>{@code isolation} and {@code auto-commit}: the pool's settings, see
 * {@link NodeArguments#dataSource}</li>
 * <li>{@code follow} ({@code false}): whether the node follows the decision log of every
 * group and serves reads, recorded in {@code reads-file}, see {@link FollowedLog}, with
 * {@code read-interval} (150 ms) and {@code read-bounds} ({@code PT0.5S,PT2S}), the
 * staleness bounds of its bounded reads</li>
 * <li>{@code daemons} (none): comma-separated daemons whose agents make the fenced writes
 * of {@link DaemonWrites}, with {@code daemon-group} ({@code default}),
 * {@code ack-timeout}, {@code drain-timeout}, {@code settle} and
 * {@code daemon-write-interval} (100 ms)</li>
 * </ul>
 * At {@code READY} the node also prints {@code CLOCK} with its wall clock, so that a test
 * can check a faked one.
 */
public final class TestNode {

	private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(20);

	private TestNode() {
	}

	/**
	 * Creates a cluster of test nodes on a fresh schema of the {@link TestDatabase}.
	 * @param settings the settings of every node
	 * @param groups the groups every node takes part in
	 * @return the cluster, to register with {@code @RegisterExtension}
	 */
	public static Cluster cluster(LeaseSettings settings, String... groups) {
		return cluster(settings, TestDatabase::createSchema, groups);
	}

	/**
	 * Creates a cluster of test nodes on a fresh database of the
	 * {@link MariaDbTestDatabase}'s server, in which each node logs in with a user of its
	 * own.
	 * @param settings the settings of every node
	 * @param groups the groups every node takes part in
	 * @return the cluster, to register with {@code @RegisterExtension}
	 */
	public static Cluster clusterOnMariaDb(LeaseSettings settings, String... groups) {
		return new Cluster(launcher(settings, List.of(groups)),
				() -> new MariaDbClusterDatabase(MariaDbTestDatabase.create()));
	}

	/**
	 * Creates a cluster of test nodes on a fresh database of a MariaDB server of the
	 * test's own, for example a {@link TemporaryMariaDb} started in {@code @BeforeAll},
	 * so that the server runs before the database is created.
	 * @param settings the settings of every node
	 * @param databases creates the database of each test
	 * @param groups the groups every node takes part in
	 * @return the cluster, to register with {@code @RegisterExtension}
	 */
	public static Cluster clusterOnMariaDb(LeaseSettings settings, Supplier<MariaDbTestDatabase> databases,
			String... groups) {
		return new Cluster(launcher(settings, List.of(groups)), () -> new MariaDbClusterDatabase(databases.get()));
	}

	/**
	 * Creates a cluster of test nodes on a database of the test's own, for example a
	 * {@link ReplicatedPostgres} pair; register its extension before the cluster, so that
	 * the servers run before the schema is created and until it is dropped.
	 * @param settings the settings of every node
	 * @param schemas creates the schema of each test
	 * @param groups the groups every node takes part in
	 * @return the cluster, to register with {@code @RegisterExtension}
	 */
	public static Cluster cluster(LeaseSettings settings, Supplier<TestDatabase> schemas, String... groups) {
		return new Cluster(launcher(settings, List.of(groups)), () -> new PostgresClusterDatabase(schemas.get()));
	}

	/**
	 * Returns the launcher of the test nodes of a {@link Cluster}, each with its own role
	 * on the cluster's schema, and not through a proxy: the fault tests put their own
	 * {@link StallingProxy} in front of the nodes that need one.
	 * @param settings the settings of every node
	 * @param groups the groups every node takes part in
	 * @return the launcher
	 */
	private static NodeLauncher launcher(LeaseSettings settings, List<String> groups) {
		NodeLauncher.Login login = (nodeId, url, user, password) -> {
			List<String> arguments = new ArrayList<>(arguments(settings));
			arguments.add("--url=" + url);
			arguments.add("--user=" + user);
			arguments.add("--password=" + password);
			arguments.add("--groups=" + String.join(",", groups));
			return arguments;
		};
		return new NodeLauncher(TestNode.class, login, NodeProcess::start, STARTUP_TIMEOUT, true, false);
	}

	/**
	 * Starts a test node outside a cluster.
	 * @param nodeId the node id
	 * @param arguments the other arguments, see the class description
	 * @param stderr the file that receives the node's standard error
	 * @return the running node
	 * @throws IOException if the process cannot be started
	 */
	public static NodeProcess start(String nodeId, List<String> arguments, Path stderr) throws IOException {
		return NodeProcess.start(TestNode.class, nodeId, arguments, Map.of(), stderr);
	}

	/**
	 * Runs the node until SIGTERM, SIGKILL, or the end of the process that started it.
	 * @param args the arguments, see the class description
	 * @throws Exception if the node cannot start
	 */
	public static void main(String[] args) throws Exception {
		PrintStream events = NodeEventLines.takeStandardOutput();
		NodeArguments arguments = NodeArguments.parse(args);
		String nodeId = arguments.required("node");
		List<String> crashTakeover = Arrays.stream(arguments.get("crash-takeover", "").split(","))
			.filter((group) -> !group.isBlank())
			.toList();
		// Each crash-takeover group that another node leads keeps a connection waiting on
		// PostgreSQL; on MariaDB, the leader's session watcher takes one. With the
		// daemons group among them, the watch of the next node's session takes one more,
		// and on MariaDB the bell another.
		String daemonGroup = arguments.get("daemon-group", "default");
		HikariDataSource dataSource = arguments.dataSource(nodeId,
				3 + crashTakeover.size() + (crashTakeover.contains(daemonGroup) ? 2 : 0));
		NodeDialect dialect = NodeDialect.of(arguments.required("url"));
		CoordinationStore store = coordinationStore(arguments, dialect, dataSource);
		NodeDialect.crashTakeover(store, crashTakeover, daemonGroup);
		AtomicReference<@Nullable DaemonCoordinator> daemons = new AtomicReference<>();
		List<String> groups = Arrays.asList(arguments.required("groups").split(","));
		LeaderEngine engine = new LeaderEngine(store, arguments.leaseSettings(),
				new NodeRegistration(nodeId, nodeId, host(), ProcessHandle.current().pid()), groups, (event) -> {
					NodeEventLines.print(events, NodeEventLines.of(event));
					DaemonCoordinator coordinator = daemons.get();
					if (coordinator != null && (event instanceof NodeJoinedEvent || event instanceof NodeLeftEvent
							|| event instanceof LeadershipGrantedEvent)) {
						coordinator.wake();
					}
				});
		Node node = new Node(engine, store, dialect, dataSource, arguments,
				(event) -> NodeEventLines.print(events, event));
		FencedWriter writer = Boolean.parseBoolean(arguments.get("writer", "false")) ? writer(node) : null;
		int loadThreads = Integer.parseInt(arguments.get("load-threads", "0"));
		GuardedLoad load = (loadThreads > 0) ? load(node, loadThreads) : null;
		FollowedLog followed = Boolean.parseBoolean(arguments.get("follow", "false")) ? follow(node, groups) : null;
		daemons.set(arguments.get("daemons", "").isBlank() ? null : daemons(node));
		NodeShutdown shutdown = NodeShutdown.install(events, nodeId, dataSource, () -> {
			DaemonCoordinator coordinator = daemons.get();
			if (coordinator != null) {
				coordinator.stop();
			}
			// The engine first: its revokes empty the tokens, so the load stops guarding
			// and the releases wait only for the transactions under way, as an
			// application's would.
			engine.stop();
			if (load != null) {
				load.stop();
			}
			if (writer != null) {
				writer.stop();
			}
			if (followed != null) {
				followed.stop();
			}
		});
		warmUpEventLines(nodeId);
		engine.start();
		if (writer != null) {
			writer.start();
		}
		if (load != null) {
			load.start();
		}
		if (followed != null) {
			followed.start();
		}
		DaemonCoordinator coordinator = daemons.get();
		if (coordinator != null) {
			coordinator.start();
		}
		NodeEventLines.print(events, new NodeEvent(System.nanoTime(), Type.READY, null, 0, nodeId, null));
		NodeEventLines.print(events,
				new NodeEvent(System.nanoTime(), Type.CLOCK, null, System.currentTimeMillis(), nodeId, null));
		shutdown.await();
	}

	/**
	 * Formats one line of each leadership type without printing it, so that the first
	 * grant or revoke a node prints does not pay for loading and linking this harness's
	 * own code: the benchmarks time hand-overs up to these lines, and should time the
	 * engine.
	 */
	private static void warmUpEventLines(String nodeId) {
		for (Object event : List.of(new LeadershipGrantedEvent("-", 1, nodeId),
				new LeadershipRevokedEvent("-", 1, nodeId, RevokeReason.SHUTDOWN),
				new LeaderChangedEvent("-", nodeId, 1, Instant.EPOCH))) {
			NodeEvent line = NodeEventLines.of(event);
			if (line != null) {
				NodeEvent.parse(line.format());
			}
		}
	}

	/**
	 * Returns the database's coordination store or, with {@code --etcd}, etcd's, which
	 * runs without the harness's parts that need the leases in the database.
	 */
	private static CoordinationStore coordinationStore(NodeArguments arguments, NodeDialect dialect,
			DataSource dataSource) {
		String endpoints = arguments.optional("etcd");
		if (endpoints == null) {
			return dialect.coordinationStore(dataSource, prefix(arguments), queryTimeout(arguments));
		}
		List<String> unsupported = new ArrayList<>();
		if (!arguments.get("crash-takeover", "").isBlank()) {
			unsupported.add("--crash-takeover");
		}
		if (Integer.parseInt(arguments.get("load-threads", "0")) > 0) {
			unsupported.add("--load-threads");
		}
		if (Boolean.parseBoolean(arguments.get("follow", "false"))) {
			unsupported.add("--follow");
		}
		if (!arguments.get("daemons", "").isBlank()) {
			unsupported.add("--daemons");
		}
		if (!unsupported.isEmpty()) {
			throw new IllegalArgumentException(String.join(", ", unsupported) + " cannot run with --etcd: crash "
					+ "takeover and the guarded load need the leases in the database, and the decision log and the "
					+ "daemons on etcd are not part of this test node");
		}
		Duration timeout = arguments.duration("etcd-timeout", Duration.ofSeconds(3));
		Client client = EtcdMemberClients.create(Arrays.stream(endpoints.split(",")).map(URI::create).toList(),
				timeout);
		return new EtcdCoordinationStore(client, arguments.get("etcd-prefix", "leader"), timeout);
	}

	private static FencedWriter writer(Node node) {
		NodeArguments arguments = node.arguments();
		return new FencedWriter(log(node, "writer-table", "fault_log", arguments.get("writer-fence", "guard")),
				arguments.duration("writer-interval", Duration.ofMillis(30)),
				Long.parseLong(arguments.get("writer-max-attempts", "1000000")));
	}

	private static GuardedLoad load(Node node, int threads) {
		NodeArguments arguments = node.arguments();
		return new GuardedLoad(log(node, "load-table", "fault_load", "guard"), threads,
				arguments.leaseSettings().safeWindow(), arguments.duration("load-hold", Duration.ofMillis(100)),
				Long.parseLong(arguments.get("load-max-transactions", "10000000")));
	}

	private static FollowedLog follow(Node node, List<String> groups) {
		NodeArguments arguments = node.arguments();
		LeaseSettings lease = arguments.leaseSettings();
		List<Duration> bounds = Arrays.stream(arguments.get("read-bounds", "PT0.5S,PT2S").split(","))
			.map(Duration::parse)
			.toList();
		return new FollowedLog(node.dialect()
			.logStore(node.dataSource(), prefix(arguments), queryTimeout(arguments), lease.safeWindow(), node.store()),
				node.engine().nodeId(), groups, node.dataSource(), Path.of(arguments.required("reads-file")),
				arguments.duration("read-interval", Duration.ofMillis(150)), bounds);
	}

	private static DaemonCoordinator daemons(Node node) {
		NodeArguments arguments = node.arguments();
		LeaseSettings lease = arguments.leaseSettings();
		DaemonWrites writes = new DaemonWrites(node.dataSource(), node.engine().nodeId(),
				Long.parseLong(arguments.get("incarnation", "1")),
				arguments.duration("daemon-write-interval", Duration.ofMillis(100)));
		Map<String, DaemonAgent> agents = new LinkedHashMap<>();
		for (String name : arguments.required("daemons").split(",")) {
			agents.put(name.strip(), writes::runPolitely);
		}
		DaemonSettings defaults = DaemonSettings.defaults();
		DaemonSettings settings = new DaemonSettings(arguments.get("daemon-group", "default"),
				arguments.duration("ack-timeout", defaults.ackTimeout()),
				arguments.duration("drain-timeout", defaults.drainTimeout()), 2,
				arguments.duration("settle", defaults.settleWindow()));
		return new DaemonCoordinator(node.engine(), node.engine(), node.engine(),
				node.dialect()
					.daemonStore(node.dataSource(), prefix(arguments), queryTimeout(arguments),
							lease.nodeExpiry().minus(lease.safetyMargin()), node.store()),
				settings, agents, (event) -> System.err.println("Daemon event " + event));
	}

	private static FencedLog log(Node node, String tableArgument, String defaultTable, String fence) {
		if (!List.of("guard", "log", "fences").contains(fence)) {
			throw new IllegalArgumentException("--writer-fence must be guard, log or fences, not '" + fence + "'");
		}
		NodeArguments arguments = node.arguments();
		TablePrefix prefix = prefix(arguments);
		Duration queryTimeout = queryTimeout(arguments);
		Duration holdLimit = arguments.leaseSettings().safeWindow();
		NodeDialect dialect = node.dialect();
		return new FencedLog(node.engine(), node.dataSource(),
				dialect.fencingStore(node.dataSource(), prefix, queryTimeout, holdLimit, node.store()),
				"log".equals(fence) ? dialect.logStore(node.dataSource(), prefix, queryTimeout, holdLimit, node.store())
						: null,
				"fences".equals(fence), dialect.sleepSql(), queryTimeout, arguments.get(tableArgument, defaultTable),
				Long.parseLong(arguments.get("incarnation", "1")), node.events());
	}

	private static TablePrefix prefix(NodeArguments arguments) {
		return new TablePrefix(arguments.get("table-prefix", "leader_"));
	}

	private static Duration queryTimeout(NodeArguments arguments) {
		return arguments.duration("query-timeout", Duration.ofSeconds(1));
	}

	/**
	 * Returns the arguments that make a {@link TestNode} run with the given settings.
	 * @param settings the settings
	 * @return the arguments
	 */
	static List<String> arguments(LeaseSettings settings) {
		List<String> arguments = new ArrayList<>();
		arguments.add("--lease=" + settings.duration());
		arguments.add("--renew=" + settings.renewInterval());
		arguments.add("--retry=" + settings.retryInterval());
		arguments.add("--margin=" + settings.safetyMargin());
		arguments.add("--node-expiry=" + settings.nodeExpiry());
		arguments.add("--yield-cooldown=" + settings.yieldCooldown());
		return arguments;
	}

	private static String host() {
		try {
			return InetAddress.getLocalHost().getHostName();
		}
		catch (UnknownHostException ex) {
			return "localhost";
		}
	}

	/**
	 * What the writer and the load of a node are built on.
	 */
	private record Node(LeaderEngine engine, CoordinationStore store, NodeDialect dialect, HikariDataSource dataSource,
			NodeArguments arguments, Consumer<NodeEvent> events) {
	}

}
