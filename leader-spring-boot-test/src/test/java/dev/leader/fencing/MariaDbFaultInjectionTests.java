package dev.leader.fencing;

import dev.leader.test.MariaDbTestDatabase;
import dev.leader.test.TestNode;

/**
 * The fault run of {@link AbstractFaultInjectionTests} on MariaDB, a fresh database of
 * {@link MariaDbTestDatabase}'s server per test, with the MariaDB stores: every fault
 * kind of the PostgreSQL run applies. A node's sessions are ended with
 * {@code KILL CONNECTION}, found in {@code information_schema.PROCESSLIST} by the user it
 * logs in with, which is its own; that also ends the session that holds the leader's
 * wake-up lock, so the followers are woken. The proxies stall the MariaDB protocol as
 * they stall PostgreSQL's. The decision log has no notifications on MariaDB: other nodes
 * learn of a leader's appends from the heartbeat, which the checks do not depend on, as
 * they read the tables.
 * <p>
 * Its first long run found a node frozen between two statements of its own heartbeat
 * transaction holding the lease rows for as long as it was frozen (one episode in 300),
 * which the idle limit of the starter's transactions on MariaDB now ends.
 * <p>
 * The normal suite runs {@value #EPISODES} episodes, about two minutes. The long run is
 * {@code ./mvnw -pl leader-spring-boot-test -am verify -Dtest=MariaDbFaultInjectionTests -Dsurefire.failIfNoSpecifiedTests=false -Dfault.episodes=300};
 * {@code -Dfault.seed=N} repeats a run's choices. The summary goes to
 * {@code target/fault-summary-mariadb.txt}.
 */
class MariaDbFaultInjectionTests extends AbstractFaultInjectionTests {

	private static final int EPISODES = 40;

	/**
	 * Connections a node needs besides its load: one for each transition of the
	 * coordination store, which borrows rather than keeps; for the wake-ups, one that
	 * holds the locks of the groups the node leads and one per group it follows, so two
	 * at most with two groups; one for the fenced writer; and one to spare.
	 */
	private static final int POOL_SIZE_WITHOUT_LOAD = 5;

	MariaDbFaultInjectionTests() {
		super(TestNode.clusterOnMariaDb(FAST, ALPHA, BETA), POOL_SIZE_WITHOUT_LOAD, EPISODES,
				"fault-summary-mariadb.txt");
	}

}
