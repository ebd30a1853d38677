package dev.leader.sample;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.DaemonAgent;
import dev.leader.DaemonContext;
import dev.leader.daemon.DaemonCoordinator;
import dev.leader.daemon.DaemonSettings;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.LeaderEngine;
import dev.leader.lease.LeaseSettings;
import dev.leader.node.NodeRegistration;
import dev.leader.postgres.PostgresCoordinationStore;
import dev.leader.postgres.PostgresDaemonStore;
import dev.leader.test.TestDatabase;
import org.jspecify.annotations.Nullable;

/**
 * A second node of the cluster, running in the test's JVM on a pool of its own: a bare
 * {@link LeaderEngine} on the sample application's schema and, if asked, a
 * {@link DaemonCoordinator} whose agents only wait to be cancelled. Closing it hands its
 * daemons back, then stops the engine, which releases its leases and deregisters it.
 */
final class OtherNode implements AutoCloseable {

	static final String ID = "other-node";

	static final String NAME = "other";

	static final String HOST = "other-host";

	static final long PID = 4242;

	private final HikariDataSource dataSource;

	private final LeaderEngine engine;

	private final @Nullable DaemonCoordinator daemons;

	private OtherNode(HikariDataSource dataSource, LeaderEngine engine, @Nullable DaemonCoordinator daemons) {
		this.dataSource = dataSource;
		this.engine = engine;
		this.daemons = daemons;
	}

	/**
	 * Starts a node that takes part in the given groups, with the same timing as the
	 * application under test.
	 * @param database the application's schema
	 * @param settings the timing
	 * @param groups the groups
	 * @return the running node
	 */
	static OtherNode start(TestDatabase database, LeaseSettings settings, String... groups) {
		return start(database, settings, null, List.of(), groups);
	}

	/**
	 * Starts a node that takes part in the given groups and can run the given daemons,
	 * with the same timing as the application under test. Its agents do no work: they
	 * wait to be cancelled.
	 * @param database the application's schema
	 * @param settings the lease timing
	 * @param daemonSettings the daemon timing
	 * @param daemons the daemons it advertises
	 * @param groups the groups
	 * @return the running node
	 */
	static OtherNode startWithDaemons(TestDatabase database, LeaseSettings settings, DaemonSettings daemonSettings,
			List<String> daemons, String... groups) {
		return start(database, settings, daemonSettings, daemons, groups);
	}

	private static OtherNode start(TestDatabase database, LeaseSettings settings,
			@Nullable DaemonSettings daemonSettings, List<String> daemons, String... groups) {
		HikariDataSource dataSource = database.dataSource(4);
		PostgresCoordinationStore store = new PostgresCoordinationStore(dataSource, new TablePrefix("leader_"),
				Duration.ofSeconds(2));
		LeaderEngine engine = new LeaderEngine(store, settings, new NodeRegistration(ID, NAME, HOST, PID),
				List.of(groups), (event) -> {
				});
		DaemonCoordinator coordinator = null;
		if (daemonSettings != null) {
			Map<String, DaemonAgent> agents = new LinkedHashMap<>();
			daemons.forEach((daemon) -> agents.put(daemon, OtherNode::idle));
			coordinator = new DaemonCoordinator(engine, engine, engine,
					new PostgresDaemonStore(dataSource, new TablePrefix("leader_"), Duration.ofSeconds(2),
							settings.nodeExpiry().minus(settings.safetyMargin()), store),
					daemonSettings, agents, (event) -> {
					});
		}
		engine.start();
		if (coordinator != null) {
			coordinator.start();
		}
		return new OtherNode(dataSource, engine, coordinator);
	}

	private static void idle(DaemonContext context) throws InterruptedException {
		while (!context.awaitCancellation(Duration.ofSeconds(1))) {
			// Nothing to do: this node only has to be able to take the daemon.
		}
	}

	LeaderEngine engine() {
		return this.engine;
	}

	@Override
	public void close() {
		if (this.daemons != null) {
			this.daemons.stop();
		}
		this.engine.stop();
		this.dataSource.close();
	}

}
