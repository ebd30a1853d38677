package dev.leader.daemon;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leader.DaemonAgent;
import dev.leader.LeadershipGrantedEvent;
import dev.leader.NodeJoinedEvent;
import dev.leader.jdbc.PostgresCoordinationStore;
import dev.leader.jdbc.PostgresDaemonStore;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.LeaderEngine;
import dev.leader.lease.LeaseSettings;
import dev.leader.node.NodeRegistration;
import dev.leader.test.InProcessNodes;
import dev.leader.test.NodeProxies;
import dev.leader.test.StallingProxy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.simple.JdbcClient;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Review 2: G4 when a node's heartbeats succeed but its reads of the assignments do not
 * (here: the connections its daemon store borrows stall, the engine's kept heartbeat
 * connection does not).
 */
class DaemonReviewTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	private static final Duration QUERY_TIMEOUT = Duration.ofSeconds(3);

	@RegisterExtension
	final InProcessNodes nodes = new InProcessNodes();

	@RegisterExtension
	final NodeProxies proxies = new NodeProxies(() -> this.nodes.database().url());

	@Test
	void daemonRevokedWhileItsNodeCannotReadItsAssignmentsNeverRunsOnTwoNodesAtOnce() throws Exception {
		LeaseSettings lease = new LeaseSettings(Duration.ofSeconds(2), Duration.ofMillis(300), Duration.ofMillis(300),
				Duration.ofMillis(200), Duration.ofSeconds(5), Duration.ofSeconds(2));
		DaemonSettings daemons = new DaemonSettings("default", Duration.ofSeconds(2), Duration.ofSeconds(1), 2,
				Duration.ZERO);
		List<Run> runs = new CopyOnWriteArrayList<>();
		// b leads and runs the daemon first.
		start("b", lease, daemons, this.nodes.dataSource(), this.nodes.dataSource(), recording("b", runs));
		awaitActive("steady", "b", 1);
		StallingProxy proxyOfA = this.proxies.get("a");
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(proxyOfA.jdbcUrl());
		config.setUsername(this.nodes.dataSource().getUsername());
		config.setPassword(this.nodes.dataSource().getPassword());
		config.setMaximumPoolSize(4);
		HikariDataSource throughProxy = new HikariDataSource(config);
		this.nodes.closeAfterTest(throughProxy::close);
		// a heartbeats directly; its daemon store's connections go through the proxy.
		start("a", lease, daemons, this.nodes.dataSource(), throughProxy, recording("a", runs));
		PostgresDaemonStore operator = new PostgresDaemonStore(this.nodes.dataSource(), PREFIX, QUERY_TIMEOUT,
				Duration.ofSeconds(4));
		operator.request(DaemonRequest.Kind.MOVE, "steady", "a");
		awaitActive("steady", "a", 2);
		await().atMost(Duration.ofSeconds(3)).until(() -> runs.stream().anyMatch((run) -> run.node().equals("a")));
		long stalledAt = System.nanoTime();
		proxyOfA.stall(Duration.ofSeconds(6));
		operator.request(DaemonRequest.Kind.MOVE, "steady", "b");
		awaitActive("steady", "b", 3);
		await().atMost(Duration.ofSeconds(3))
			.until(() -> runs.stream().anyMatch((run) -> run.node().equals("b") && run.generation() == 3));
		// Give a's run the time to end, if it is going to end before the stall does.
		await().atMost(Duration.ofSeconds(10))
			.until(() -> runs.stream()
				.filter((run) -> run.node().equals("a"))
				.allMatch((run) -> run.ended().get() != 0));
		long now = System.nanoTime();
		List<String> timeline = runs.stream().map((run) -> run.describe(stalledAt, now)).toList();
		Run onA = runs.stream().filter((run) -> run.node().equals("a")).findFirst().orElseThrow();
		Run onB = runs.stream()
			.filter((run) -> run.node().equals("b") && run.generation() == 3)
			.findFirst()
			.orElseThrow();
		assertThat(onA.overlaps(onB, now)).as("a run on a overlaps a run on b; runs, ms from the stall: %s", timeline)
			.isFalse();
	}

	private static DaemonAgent recording(String node, List<Run> runs) {
		return (context) -> {
			Run run = new Run(node, context.generation(), System.nanoTime(), new AtomicLong());
			runs.add(run);
			try {
				context.awaitCancellation(Duration.ofMinutes(1));
			}
			finally {
				run.ended().set(System.nanoTime());
			}
		};
	}

	private LeaderEngine start(String node, LeaseSettings lease, DaemonSettings daemons, DataSource engineDataSource,
			DataSource daemonDataSource, DaemonAgent agent) {
		PostgresCoordinationStore coordination = new PostgresCoordinationStore(engineDataSource, PREFIX, QUERY_TIMEOUT);
		DaemonCoordinator[] coordinator = new DaemonCoordinator[1];
		LeaderEngine engine = new LeaderEngine(coordination, lease,
				new NodeRegistration(node, node, "localhost", ProcessHandle.current().pid()), List.of(), (event) -> {
					this.nodes.events().add(event);
					if (coordinator[0] != null
							&& (event instanceof LeadershipGrantedEvent || event instanceof NodeJoinedEvent)) {
						coordinator[0].wake();
					}
				});
		coordinator[0] = new DaemonCoordinator(engine,
				new PostgresDaemonStore(daemonDataSource, PREFIX, QUERY_TIMEOUT,
						lease.nodeExpiry().minus(lease.safetyMargin()), coordination),
				daemons, Map.of("steady", agent), this.nodes.events()::add);
		engine.start();
		coordinator[0].start();
		this.nodes.closeAfterTest(engine::stop);
		this.nodes.closeAfterTest(coordinator[0]::stop);
		return engine;
	}

	private void awaitActive(String daemon, String node, long generation) {
		await().atMost(Duration.ofSeconds(8))
			.until(() -> assignment(daemon), (row) -> row.equals("ACTIVE " + node + " " + generation));
	}

	private String assignment(String daemon) {
		return JdbcClient.create(this.nodes.dataSource())
			.sql("SELECT state || ' ' || node_id || ' ' || generation FROM leader_assignments WHERE daemon_name = ?")
			.param(daemon)
			.query(String.class)
			.optional()
			.orElse("none");
	}

	private record Run(String node, long generation, long started, AtomicLong ended) {

		boolean overlaps(Run other, long now) {
			return this.started - other.end(now) < 0 && other.started - end(now) < 0;
		}

		long end(long now) {
			long end = this.ended.get();
			return (end != 0) ? end : now;
		}

		String describe(long origin, long now) {
			return String.format("%s generation %d from %+d to %s", this.node, this.generation,
					TimeUnit.NANOSECONDS.toMillis(this.started - origin), (this.ended.get() != 0)
							? String.format("%+d", TimeUnit.NANOSECONDS.toMillis(end(now) - origin)) : "running");
		}

	}

}
