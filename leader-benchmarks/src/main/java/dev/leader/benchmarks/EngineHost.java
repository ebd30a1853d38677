package dev.leader.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.LeaderEngine;
import dev.leader.lease.LeaseSettings;
import dev.leader.lease.LeaseState;
import dev.leader.node.NodeRegistration;
import dev.leader.test.CountingDataSource;

/**
 * A JVM that hosts several lightweight nodes: one {@link LeaderEngine} each, with the
 * default settings, sharing one small pool and one {@code LISTEN} connection (on MariaDB
 * one store's wake-ups: run one engine per host there, as {@link IdleLoad} does for up to
 * five nodes), so that a hundred nodes fit in a few processes and within the server's
 * connection limit. Each engine still makes its own round trips, exactly as a node of its
 * own would. They take turns on the store, so that they all run on the connection it
 * keeps, as a node's single {@code leader-io} thread does on its own store; otherwise a
 * round trip that overlapped another would borrow a second connection, which the pool
 * checks first if it has been idle, and the server would count load that separate nodes
 * never cause.
 * <p>
 * Arguments: {@code url user password firstNode nodeCount groupCount leadFirst}. With
 * {@code leadFirst} the first engine is started alone and takes every group before the
 * others start, so that the cluster reaches its steady state without a hundred nodes
 * racing for a thousand leases. Prints {@code HOST READY} once every engine runs, then
 * {@code STATEMENTS <n>} every second with the number of statements its engines have
 * sent, and stops them all, releasing their leases, on SIGTERM.
 */
public final class EngineHost {

	private EngineHost() {
	}

	public static void main(String[] args) throws Exception {
		String url = args[0];
		String user = args[1];
		String password = args[2];
		int firstNode = Integer.parseInt(args[3]);
		int nodeCount = Integer.parseInt(args[4]);
		int groupCount = Integer.parseInt(args[5]);
		boolean leadFirst = Boolean.parseBoolean(args[6]);
		HikariConfig config = new HikariConfig();
		config.setPoolName("host-" + firstNode);
		config.setJdbcUrl(url);
		config.setUsername(user);
		config.setPassword(password);
		config.setMaximumPoolSize(Math.min(nodeCount, 6) + 1);
		config.setConnectionTimeout(3000);
		HikariDataSource dataSource = new HikariDataSource(config);
		// Counts the engines' own statements, which the server's transaction count mixes
		// with the pool's validation queries and with autovacuum.
		CountingDataSource counted = new CountingDataSource(dataSource);
		SharedListenStore store = new SharedListenStore(
				Dialect.of(url).coordinationStore(counted.dataSource(), Duration.ofSeconds(3)));
		List<String> groups = IntStream.range(0, groupCount).mapToObj((i) -> "group-" + i).toList();
		List<LeaderEngine> engines = new CopyOnWriteArrayList<>();
		CountDownLatch stopped = new CountDownLatch(1);
		Runtime.getRuntime().addShutdownHook(new Thread(() -> {
			engines.forEach(LeaderEngine::stop);
			store.close();
			dataSource.close();
			stopped.countDown();
		}, "host-shutdown"));
		ProcessHandle.current().parent().ifPresent((parent) -> parent.onExit().thenRun(() -> System.exit(1)));
		for (int i = 0; i < nodeCount; i++) {
			String id = "node-" + (firstNode + i);
			LeaderEngine engine = new LeaderEngine(store, LeaseSettings.defaults(),
					new NodeRegistration(id, id, "localhost", ProcessHandle.current().pid()), groups, (event) -> {
					});
			engines.add(engine);
			engine.start();
			if (i == 0 && leadFirst) {
				for (String group : groups) {
					if (!engine.awaitLeadership(group, Duration.ofMinutes(2))) {
						throw new IllegalStateException(id + " could not take " + group);
					}
				}
			}
		}
		System.out.println("HOST READY");
		while (!stopped.await(1, TimeUnit.SECONDS)) {
			System.out.println("STATEMENTS " + counted.mark());
		}
	}

	static List<String> command(BenchDatabase database, int firstNode, int nodeCount, int groupCount, boolean leadFirst,
			List<String> jvmOptions) {
		List<String> command = new ArrayList<>();
		command.add(ProcessHandle.current().info().command().orElseThrow());
		command.add("-Xmx256m");
		command.addAll(jvmOptions);
		command.add("-XX:+UseSerialGC");
		command.add("-cp");
		command.add(System.getProperty("java.class.path"));
		command.add(EngineHost.class.getName());
		command.add(database.url());
		command.add(database.user());
		command.add(database.password().isEmpty() ? "" : database.password());
		command.add(Integer.toString(firstNode));
		command.add(Integer.toString(nodeCount));
		command.add(Integer.toString(groupCount));
		command.add(Boolean.toString(leadFirst));
		return command;
	}

	/**
	 * A store whose release notifications come from one {@code LISTEN} connection for all
	 * the engines of the JVM, and whose round trips take turns, one at a time.
	 */
	private static final class SharedListenStore implements CoordinationStore {

		private final CoordinationStore delegate;

		private final List<ReleaseListener> listeners = new CopyOnWriteArrayList<>();

		private final AutoCloseable subscription;

		SharedListenStore(CoordinationStore delegate) {
			this.delegate = delegate;
			this.subscription = delegate
				.listen((group, successor) -> this.listeners.forEach((each) -> each.released(group, successor)));
		}

		@Override
		public synchronized AcquireResult acquire(String group, NodeRegistration node, Duration duration) {
			return this.delegate.acquire(group, node, duration);
		}

		@Override
		public synchronized Tick tick(NodeRegistration node, Map<String, Long> held, Collection<String> groups,
				Duration leaseDuration, Duration nodeExpiry) {
			return this.delegate.tick(node, held, groups, leaseDuration, nodeExpiry);
		}

		@Override
		public synchronized Collection<String> release(String nodeId, Map<String, Long> held) {
			return this.delegate.release(nodeId, held);
		}

		@Override
		public synchronized void deregister(NodeRegistration node) {
			this.delegate.deregister(node);
		}

		@Override
		public synchronized List<LeaseState> leases() {
			return this.delegate.leases();
		}

		@Override
		public void disconnect() {
			this.delegate.disconnect();
		}

		@Override
		public AutoCloseable listen(ReleaseListener listener) {
			this.listeners.add(listener);
			return () -> this.listeners.remove(listener);
		}

		void close() {
			this.delegate.disconnect();
			try {
				this.subscription.close();
			}
			catch (Exception ex) {
				// stopping anyway
			}
		}

	}

}
