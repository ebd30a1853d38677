package dev.leader.fencing;

import java.time.Duration;
import java.util.List;

import dev.leader.test.FaultHistory.FaultKind;
import dev.leader.test.TemporaryMariaDb;
import dev.leader.test.TestNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The fault run of {@link AbstractFaultInjectionTests} on MariaDB: a server of the test's
 * own with the binary log on ({@link TemporaryMariaDb}, {@code --log-bin}), so that its
 * global durability settings and its crashes touch no other test, with the MariaDB
 * stores. A node's sessions are ended with {@code KILL CONNECTION}, found in
 * {@code information_schema.PROCESSLIST} by the user it logs in with, which is its own;
 * the proxies stall the MariaDB protocol as they stall PostgreSQL's. The decision log has
 * no notifications on MariaDB: other nodes learn of a leader's appends from the
 * heartbeat.
 * <p>
 * The durability rows: {@code innodb_flush_log_at_trx_commit} 1 with {@code sync_binlog}
 * 1, 2 with 1, and 1 with 0. The server event: a crash of {@code mariadbd} (SIGKILL) and
 * a restart, which none of these rows may lose a commit to, as the operating system keeps
 * what the server wrote; an operating-system crash, which rows two and three may lose
 * commits to, is not simulated.
 * <p>
 * Its first long run found a node frozen between two statements of its own heartbeat
 * transaction holding the lease rows for as long as it was frozen (one episode in 300),
 * which the idle limit of the starter's transactions on MariaDB now ends.
 * <p>
 * The normal suite runs {@value #EPISODES} episodes, every cell once. The long run is
 * {@code ./mvnw -pl leader-spring-boot-test -am verify -Dtest=MariaDbFaultInjectionTests -Dsurefire.failIfNoSpecifiedTests=false -Dfault.episodes=540};
 * {@code -Dfault.seed=N} repeats a run's choices. The summary goes to
 * {@code target/fault-summary-mariadb.txt}.
 */
class MariaDbFaultInjectionTests extends AbstractFaultInjectionTests {

	private static final int EPISODES = 18;

	/**
	 * Connections a node needs besides its load: one for each transition of the
	 * coordination store, which borrows rather than keeps; for the wake-ups, one that
	 * holds the locks of the groups the node leads and one per group it follows, so two
	 * at most with two groups; one for the fenced writer; and one to spare.
	 */
	private static final int POOL_SIZE_WITHOUT_LOAD = 5;

	private static final List<String> ROWS = List.of("innodb_flush_log_at_trx_commit=1+sync_binlog=1",
			"innodb_flush_log_at_trx_commit=2+sync_binlog=1", "innodb_flush_log_at_trx_commit=1+sync_binlog=0");

	/**
	 * Static, so that the server starts before the cluster, an instance's extension,
	 * creates its database; it starts before and stops after each test all the same.
	 */
	private static TemporaryMariaDb server;

	MariaDbFaultInjectionTests() {
		super(TestNode.clusterOnMariaDb(FAST, () -> server.createDatabase(), ALPHA, BETA), POOL_SIZE_WITHOUT_LOAD,
				EPISODES, "fault-summary-mariadb.txt");
	}

	@BeforeAll
	static void startServer() {
		server = TemporaryMariaDb.start("--log-bin=binlog", "--server-id=1", "--max-connections=500");
	}

	@AfterAll
	static void stopServer() {
		if (server != null) {
			server.close();
		}
	}

	@Override
	List<String> durabilityRows() {
		return ROWS;
	}

	@Override
	void applyDurability(String row) {
		server.setGlobal(row.split("\\+"));
	}

	@Override
	List<FaultKind> serverEvents(String row) {
		return List.of(FaultKind.RESTART);
	}

	@Override
	ServerEvent injectServerEvent(FaultKind kind, String row) {
		long startedAt = System.nanoTime();
		server.crashAndRestart(Duration.ofMillis(500));
		return new ServerEvent(startedAt, System.nanoTime(), "mariadbd killed with SIGKILL and restarted");
	}

}
