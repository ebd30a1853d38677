package dev.leader.lease;

import dev.leader.test.Cluster;
import dev.leader.test.TestNode;

/**
 * Crash takeover ({@code leader.lease.crash-takeover-groups}) between test node processes
 * on MariaDB, the scenarios of {@link CrashTakeoverTests}: the lease of {@code alpha} is
 * bound to the session that holds its holder's locks, whose end wakes the followers'
 * {@code GET_LOCK} waits and the holder's session watcher.
 */
class MariaDbCrashTakeoverTests extends CrashTakeoverTests {

	@Override
	Cluster cluster() {
		return TestNode.clusterOnMariaDb(SETTINGS, ALPHA, BETA).withProperty("crash-takeover", ALPHA);
	}

	@Override
	String terminateSessionSql(long session) {
		return "KILL CONNECTION " + session;
	}

	@Override
	String followersWaitingSql() {
		// The followers wait for the group's wake-up lock, whose name ends with it.
		return "SELECT count(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND STATE = 'User lock' "
				+ "AND INFO LIKE '%GET_LOCK(%wake:%:alpha''%'";
	}

	@Override
	String sessionColumn() {
		return "session_id";
	}

}
