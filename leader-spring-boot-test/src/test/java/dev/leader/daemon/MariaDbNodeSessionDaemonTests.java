package dev.leader.daemon;

import dev.leader.test.Cluster;
import dev.leader.test.TestNode;

/**
 * Node death by session on MariaDB, the scenarios of {@link NodeSessionDaemonTests}: a
 * node's row is bound to the session that holds its locks (its node lock), the next node
 * by id waits for that lock and rings the daemons leader when it gets it, and the leader
 * rings the nodes it assigns to (the daemon store's doorbells, {@code KILL QUERY} of a
 * node's waiting statement). The session is ended with {@code KILL CONNECTION}.
 */
class MariaDbNodeSessionDaemonTests extends NodeSessionDaemonTests {

	@Override
	Cluster cluster() {
		return TestNode.clusterOnMariaDb(SETTINGS, "aux").withProperty("crash-takeover", "default");
	}

	@Override
	void terminateNodeSession(String nodeId) {
		long session = this.jdbc.sql("SELECT session_id FROM leader_nodes WHERE node_id = ?")
			.param(nodeId)
			.query(Long.class)
			.single();
		this.jdbc.sql("KILL CONNECTION " + session).update();
	}

	@Override
	String boundNodesSql() {
		return "SELECT count(*) FROM leader_nodes WHERE session_id IS NOT NULL";
	}

}
