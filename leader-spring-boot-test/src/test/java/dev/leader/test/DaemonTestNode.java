package dev.leader.test;

import java.io.PrintStream;
import java.sql.Connection;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.DaemonAgent;
import dev.leader.LeadershipGrantedEvent;
import dev.leader.NodeJoinedEvent;
import dev.leader.NodeLeftEvent;
import dev.leader.daemon.DaemonCoordinator;
import dev.leader.daemon.DaemonSettings;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.LeaderEngine;
import dev.leader.lease.LeaseSettings;
import dev.leader.node.NodeRegistration;
import dev.leader.test.NodeEvent.Type;
import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * A cluster node with daemons, in a process of its own: a {@link LeaderEngine} and a
 * {@link DaemonCoordinator} without a Spring context. Started by
 * {@link Cluster#start(String, Class, List)}.
 * <p>
 * Every agent records its fenced writes in the {@code daemon_writes} table, which the
 * test creates with {@link #createWritesTable}: a row
 * {@code (daemon, generation, node, incarnation, 'W', stamp_nanos)} inserted in a
 * transaction guarded by its context, once right after it starts and then every write
 * interval, and a row of kind {@code 'R'} outside any transaction for each write the
 * guard rejected. {@code stamp_nanos} is {@link System#nanoTime()} taken after the guard
 * passed, before the commit; the id is drawn by the insert, after the guard, so ids are
 * commit order across generations as with the lease guard (see
 * {@link FaultHistory.Checks}). A normal agent returns at its first rejection; a stubborn
 * one ignores cancellation and interrupts and goes on writing until the process ends or a
 * minute has passed.
 * <p>
 * Standard output carries {@code READY}, {@code JOINED}, {@code LEFT} and {@code STOPPED}
 * {@link NodeEvent} lines. SIGTERM stops the coordinator gracefully, then the engine.
 * <p>
 * Arguments: those of {@link TestNode}, and {@code daemons} (comma-separated, may be
 * empty), {@code stubborn} (those of the daemons that ignore cancellation),
 * {@code coordinator} ({@code false} to advertise the daemons but never run or
 * acknowledge them), {@code daemon-group} ({@code default}), {@code ack-timeout},
 * {@code drain-timeout}, {@code settle}, {@code max-moves}, {@code write-interval} (200
 * ms), {@code incarnation} (1), a number that tells the processes of one node id apart.
 */
public final class DaemonTestNode {

	/**
	 * The table the agents record their writes in.
	 */
	public static final String WRITES_TABLE = "daemon_writes";

	private DaemonTestNode() {
	}

	/**
	 * Creates the {@link #WRITES_TABLE table} that the agents record their writes in;
	 * call it before the nodes start, so that their roles may use it.
	 * @param dataSource a data source on the test's schema
	 */
	public static void createWritesTable(DataSource dataSource) {
		JdbcTemplate jdbc = new JdbcTemplate(dataSource);
		boolean mariaDb = Boolean.TRUE.equals(jdbc
			.execute((Connection connection) -> connection.getMetaData().getDatabaseProductName().contains("MariaDB")));
		// Both hand out ids as the inserts draw them, which the checkers rely on.
		jdbc.execute("""
				CREATE TABLE %s (
				  id          %s PRIMARY KEY,
				  daemon      VARCHAR(120) NOT NULL,
				  generation  BIGINT       NOT NULL,
				  node        VARCHAR(120) NOT NULL,
				  incarnation BIGINT       NOT NULL,
				  kind        CHAR(1)      NOT NULL,
				  stamp_nanos BIGINT       NOT NULL,
				  written_at  %s
				)
				""".formatted(WRITES_TABLE, mariaDb ? "BIGINT AUTO_INCREMENT" : "BIGSERIAL",
				mariaDb ? "TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)"
						: "TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()"));
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
		String daemonGroup = arguments.get("daemon-group", "default");
		NodeDialect dialect = NodeDialect.of(arguments.required("url"));
		// Crash takeover keeps a connection waiting for the daemons group's leader, and
		// one for the next node's session; on MariaDB also one that holds the node's
		// locks, one that watches it and the bell.
		int kept = (dialect == NodeDialect.MARIADB) ? 5 : 2;
		HikariDataSource dataSource = arguments.dataSource(nodeId, 5 + kept * crashTakeover.size());
		AtomicReference<@Nullable DaemonCoordinator> coordinator = new AtomicReference<>();
		LeaseSettings lease = arguments.leaseSettings();
		TablePrefix prefix = new TablePrefix("leader_");
		CoordinationStore coordination = dialect.coordinationStore(dataSource, prefix, Duration.ofSeconds(1));
		NodeDialect.crashTakeover(coordination, crashTakeover, daemonGroup);
		LeaderEngine engine = new LeaderEngine(coordination, lease,
				new NodeRegistration(nodeId, nodeId, "localhost", ProcessHandle.current().pid()),
				Arrays.asList(arguments.required("groups").split(",")), (event) -> {
					NodeEventLines.print(events, NodeEventLines.ofMembership(event));
					DaemonCoordinator daemons = coordinator.get();
					if (daemons != null && (event instanceof NodeJoinedEvent || event instanceof NodeLeftEvent
							|| event instanceof LeadershipGrantedEvent)) {
						daemons.wake();
					}
				});
		Set<String> names = list(arguments.get("daemons", ""));
		Set<String> stubborn = list(arguments.get("stubborn", ""));
		Duration writeInterval = arguments.duration("write-interval", Duration.ofMillis(200));
		DaemonWrites recorder = new DaemonWrites(dataSource, nodeId, Long.parseLong(arguments.get("incarnation", "1")),
				writeInterval);
		if (Boolean.parseBoolean(arguments.get("coordinator", "true"))) {
			Map<String, DaemonAgent> agents = new LinkedHashMap<>();
			names.forEach((name) -> agents.put(name,
					stubborn.contains(name) ? recorder::runStubbornly : recorder::runPolitely));
			DaemonSettings defaults = DaemonSettings.defaults();
			DaemonSettings settings = new DaemonSettings(daemonGroup,
					arguments.duration("ack-timeout", defaults.ackTimeout()),
					arguments.duration("drain-timeout", defaults.drainTimeout()),
					Integer.parseInt(arguments.get("max-moves", "2")),
					arguments.duration("settle", defaults.settleWindow()));
			coordinator.set(new DaemonCoordinator(engine, engine, engine,
					dialect.daemonStore(dataSource, prefix, Duration.ofSeconds(1),
							lease.nodeExpiry().minus(lease.safetyMargin()), coordination),
					settings, agents, (event) -> System.err.println("Daemon event " + event)));
		}
		else {
			engine.advertiseDaemons(names);
		}
		NodeShutdown shutdown = NodeShutdown.install(events, nodeId, dataSource, () -> {
			DaemonCoordinator daemons = coordinator.get();
			if (daemons != null) {
				daemons.stop();
			}
			engine.stop();
		});
		engine.start();
		DaemonCoordinator daemons = coordinator.get();
		if (daemons != null) {
			daemons.start();
		}
		NodeEventLines.print(events, new NodeEvent(System.nanoTime(), Type.READY, null, 0, nodeId, null));
		shutdown.await();
	}

	private static Set<String> list(String value) {
		Set<String> names = new LinkedHashSet<>();
		for (String name : value.split(",")) {
			if (!name.isBlank()) {
				names.add(name.strip());
			}
		}
		return names;
	}

}
