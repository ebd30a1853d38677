package dev.leader.test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.LeaderEngine;
import dev.leader.lease.LeaseSettings;
import dev.leader.node.NodeRegistration;
import dev.leader.postgres.PostgresCoordinationStore;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Leader engines in the test's JVM, on a {@link MigratedSchema} of their own, as a JUnit
 * extension registered with {@code @RegisterExtension}: the schema is created before each
 * test, and after it every engine is stopped before the schema is dropped. The events of
 * every engine are collected in one list.
 */
public final class InProcessNodes implements BeforeEachCallback, AfterEachCallback {

	/**
	 * Settings that keep in-process tests short: a 2 s lease renewed every 500 ms,
	 * retries after 500 ms, a 100 ms safety margin, a 2 s node expiry and a 3 s yield
	 * cooldown.
	 */
	public static final LeaseSettings FAST = new LeaseSettings(Duration.ofSeconds(2), Duration.ofMillis(500),
			Duration.ofMillis(500), Duration.ofMillis(100), Duration.ofSeconds(2), Duration.ofSeconds(3));

	private final MigratedSchema schema;

	private final List<LeaderEngine> engines = new CopyOnWriteArrayList<>();

	private final List<AutoCloseable> closeables = new CopyOnWriteArrayList<>();

	private final List<Object> events = new CopyOnWriteArrayList<>();

	/**
	 * Creates the extension, with a pool of 8 connections on the schema.
	 */
	public InProcessNodes() {
		this(8);
	}

	/**
	 * Creates the extension.
	 * @param poolSize the size of the pool on the schema
	 */
	public InProcessNodes(int poolSize) {
		this.schema = new MigratedSchema(poolSize);
	}

	/**
	 * Starts an engine on the schema, with a query timeout of 2 s.
	 * @param settings the lease settings
	 * @param node the node
	 * @param groups the groups it takes part in
	 * @return the started engine
	 */
	public LeaderEngine start(LeaseSettings settings, NodeRegistration node, List<String> groups) {
		LeaderEngine engine = add(new LeaderEngine(
				new PostgresCoordinationStore(dataSource(), new TablePrefix("leader_"), Duration.ofSeconds(2)),
				settings, node, groups, this.events::add));
		engine.start();
		return engine;
	}

	/**
	 * Adds an engine that the test made itself, to be stopped after the test.
	 * @param engine the engine, which publishes to {@link #events()}
	 * @return the engine
	 */
	public LeaderEngine add(LeaderEngine engine) {
		this.engines.add(engine);
		return engine;
	}

	/**
	 * Adds something to close after the test: what was added last is closed first, all
	 * before the engines stop and the schema is dropped.
	 * @param closeable what to close, for example a coordinator's {@code stop}
	 */
	public void closeAfterTest(AutoCloseable closeable) {
		this.closeables.add(closeable);
	}

	/**
	 * Returns the events that the engines published, in the order they came.
	 * @return the live list, which an engine of the test's own can publish to
	 */
	public List<Object> events() {
		return this.events;
	}

	/**
	 * Returns the schema of the running test.
	 * @return the schema
	 */
	public TestDatabase database() {
		return this.schema.database();
	}

	/**
	 * Returns the pool on the schema of the running test.
	 * @return the pool
	 */
	public HikariDataSource dataSource() {
		return this.schema.dataSource();
	}

	@Override
	public void beforeEach(ExtensionContext context) {
		this.schema.create();
	}

	@Override
	public void afterEach(ExtensionContext context) throws Exception {
		try {
			for (int i = this.closeables.size() - 1; i >= 0; i--) {
				this.closeables.get(i).close();
			}
			this.engines.forEach(LeaderEngine::stop);
		}
		finally {
			this.closeables.clear();
			this.engines.clear();
			this.events.clear();
			this.schema.drop();
		}
	}

}
