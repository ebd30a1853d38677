package dev.leader.sample;

import java.time.Duration;
import java.util.List;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.jdbc.PostgresCoordinationStore;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.LeaderEngine;
import dev.leader.lease.LeaseSettings;
import dev.leader.node.NodeRegistration;
import dev.leader.test.TestDatabase;

/**
 * A second node of the cluster, running in the test's JVM on a pool of its own: a bare {@link LeaderEngine} on the
 * sample application's schema. Closing it stops the engine, which releases its leases and deregisters it.
 */
final class OtherNode implements AutoCloseable {

	static final String ID = "other-node";

	static final String NAME = "other";

	static final String HOST = "other-host";

	static final long PID = 4242;

	private final HikariDataSource dataSource;

	private final LeaderEngine engine;

	private OtherNode(HikariDataSource dataSource, LeaderEngine engine) {
		this.dataSource = dataSource;
		this.engine = engine;
	}

	/**
	 * Starts a node that takes part in the given groups, with the same timing as the application under test.
	 * @param database the application's schema
	 * @param settings the timing
	 * @param groups the groups
	 * @return the running node
	 */
	static OtherNode start(TestDatabase database, LeaseSettings settings, String... groups) {
		HikariDataSource dataSource = database.dataSource(3);
		LeaderEngine engine = new LeaderEngine(
				new PostgresCoordinationStore(dataSource, new TablePrefix("leader_"), Duration.ofSeconds(2)), settings,
				new NodeRegistration(ID, NAME, HOST, PID), List.of(groups), (event) -> {
				});
		engine.start();
		return new OtherNode(dataSource, engine);
	}

	LeaderEngine engine() {
		return this.engine;
	}

	@Override
	public void close() {
		this.engine.stop();
		this.dataSource.close();
	}

}
