package dev.leader.fencing;

import dev.leader.test.TestNode;

/**
 * The fault run of {@link AbstractFaultInjectionTests} on PostgreSQL: a node's sessions
 * are terminated with {@code pg_terminate_backend}, found by the role it logs in with.
 * <p>
 * The normal suite runs {@value #EPISODES} episodes. The long run is
 * {@code ./mvnw -pl leader-spring-boot-test -am verify -Dtest=FaultInjectionTests -Dsurefire.failIfNoSpecifiedTests=false -Dfault.episodes=1000}
 * (with the {@code LEADER_TEST_JDBC_*} variables as for every test);
 * {@code -Dfault.seed=N} repeats a run's choices. The summary goes to
 * {@code target/fault-summary.txt}.
 */
class FaultInjectionTests extends AbstractFaultInjectionTests {

	private static final int EPISODES = 50;

	/**
	 * Connections a node needs besides its load: two that the engine's store keeps, one
	 * for the fenced writer, and one to spare.
	 */
	private static final int POOL_SIZE_WITHOUT_LOAD = 4;

	FaultInjectionTests() {
		super(TestNode.cluster(FAST, ALPHA, BETA), POOL_SIZE_WITHOUT_LOAD, EPISODES, "fault-summary.txt");
	}

}
