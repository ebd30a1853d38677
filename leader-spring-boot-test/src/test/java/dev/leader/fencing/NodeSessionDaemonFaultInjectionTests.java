package dev.leader.fencing;

/**
 * {@link DaemonFaultInjectionTests} with the daemons group a crash-takeover group, so
 * that every node is bound to its database session and counts as dead the moment that
 * session ends: a {@code kill -9} or a {@code pg_terminate_backend} moves its daemons at
 * once, while a SIGSTOP or a stall still waits for its heartbeat to expire. The same
 * checks hold: no two generations of a daemon commit at once, and every daemon of a node
 * hit runs again within the bound. The long run is
 * {@code -Dtest=NodeSessionDaemonFaultInjectionTests} with {@code -Dfault.episodes=500};
 * its summary is in {@code target/daemon-node-session-fault-summary.txt}.
 */
class NodeSessionDaemonFaultInjectionTests extends DaemonFaultInjectionTests {

	@Override
	boolean nodeSessions() {
		return true;
	}

	@Override
	String summaryFile() {
		return "daemon-node-session-fault-summary.txt";
	}

}
