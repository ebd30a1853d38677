package dev.leader.lease;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;

import dev.leader.test.Cluster;
import dev.leader.test.Cluster.Lease;
import dev.leader.test.NodeEvent;
import dev.leader.test.NodeEvent.Type;
import dev.leader.test.NodeProcess;
import dev.leader.test.NodeProcess.Tenure;
import dev.leader.test.TestNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Crash takeover ({@code leader.lease.crash-takeover-groups}) between test node processes
 * on PostgreSQL: {@code alpha} is bound to its holder's session, {@code beta} is not. The
 * lease is the default 10 s, so that only the session can explain a takeover within a
 * second.
 */
class CrashTakeoverTests {

	static final LeaseSettings SETTINGS = LeaseSettings.defaults();

	static final String ALPHA = "alpha";

	static final String BETA = "beta";

	private static final Duration ELECTION_TIMEOUT = Duration.ofSeconds(15);

	@RegisterExtension
	final Cluster cluster = cluster();

	Cluster cluster() {
		return TestNode.cluster(SETTINGS, ALPHA, BETA).withProperty("crash-takeover", ALPHA);
	}

	/**
	 * Returns the statement that ends a session of the server.
	 * @param session the session, as the lease's session column names it
	 * @return the statement
	 */
	String terminateSessionSql(long session) {
		return "SELECT pg_terminate_backend(" + session + ")";
	}

	/**
	 * Returns the column of the lease row that names the holder's session once the lease
	 * is bound to it.
	 * @return the column
	 */
	String sessionColumn() {
		return "session_pid";
	}

	@Test
	void followerTakesABoundLeaseOverWithinASecondOfAKillAndAnUnboundOneWhenItExpires() throws Exception {
		NodeProcess leader = electLeaderOfBoth();
		long alphaTerm = this.cluster.lease(ALPHA).orElseThrow().term();
		long betaTerm = this.cluster.lease(BETA).orElseThrow().term();
		long killedAt = System.nanoTime();
		leader.kill9();
		NodeEvent alpha = this.cluster.awaitGrant(ALPHA, alphaTerm, Duration.ofSeconds(2));
		Duration alphaAfter = Duration.ofNanos(alpha.nanoTime() - killedAt);
		NodeEvent beta = this.cluster.awaitGrant(BETA, betaTerm, SETTINGS.duration().plusSeconds(2));
		Duration betaAfter = Duration.ofNanos(beta.nanoTime() - killedAt);
		System.out.printf("kill -9 -> grant: %d ms with crash takeover, %d ms without%n", alphaAfter.toMillis(),
				betaAfter.toMillis());
		assertThat(alphaAfter).isLessThan(Duration.ofSeconds(1));
		// The lease was renewed at most a renew interval before the kill.
		assertThat(betaAfter).isGreaterThan(SETTINGS.duration().minus(SETTINGS.renewInterval()).minusMillis(500));
		assertThat(alpha.node()).isNotEqualTo(leader.nodeId());
		this.cluster.assertTenuresDoNotOverlap(ALPHA);
		this.cluster.assertTenuresDoNotOverlap(BETA);
	}

	@Test
	void pausedLeaderKeepsItsSessionSoItsLeaseIsTakenOverOnlyWhenItExpires() throws Exception {
		NodeProcess leader = electLeaderOfBoth();
		Lease before = this.cluster.lease(ALPHA).orElseThrow();
		leader.sigstop();
		try {
			NodeEvent grant = this.cluster.awaitGrant(ALPHA, before.term(), SETTINGS.duration().plusSeconds(3));
			Lease after = this.cluster.lease(ALPHA).orElseThrow();
			assertThat(after.term()).isGreaterThan(before.term());
			// The renewal of the paused leader's last heartbeat may have landed after
			// the lease was read: it only moves the expiry later.
			assertThat(grant.nanoTime()).as("grant after the paused leader's lease expired")
				.isGreaterThanOrEqualTo(before.toNanoTime(before.expiresAt()));
		}
		finally {
			leader.sigcont();
		}
		this.cluster.awaitSingleLeader(ALPHA, ELECTION_TIMEOUT);
		// A paused node prints its revoke only once it runs again, so the printed
		// tenures overlap; its safe window closed before the lease expired.
		NodeEvent revoked = leader.awaitEvent("revoke of alpha",
				(event) -> event.is(Type.REVOKED, ALPHA) && event.term() == before.term(), ELECTION_TIMEOUT);
		assertThat(revoked.reason()).isEqualTo("EXPIRED");
		assertThat(this.cluster.tenures(ALPHA)).extracting(Tenure::term).doesNotHaveDuplicates();
	}

	@Test
	void leaderWhoseBoundSessionIsKilledStepsDownAndAFollowerTakesOver() throws Exception {
		NodeProcess leader = electLeaderOfBoth();
		long term = this.cluster.lease(ALPHA).orElseThrow().term();
		long killedAt = System.nanoTime();
		// The session the lease is bound to, and no other of the node's.
		try (Connection connection = this.cluster.dataSource().getConnection();
				Statement statement = connection.createStatement()) {
			long session;
			try (ResultSet rows = statement
				.executeQuery("SELECT " + sessionColumn() + " FROM leader_leases WHERE group_name = '" + ALPHA + "'")) {
				assertThat(rows.next()).isTrue();
				session = rows.getLong(1);
			}
			statement.execute(terminateSessionSql(session));
		}
		assertStepsDownAndAFollowerTakesOver(leader, term, killedAt);
		// The node binds again, and leads beta on.
		assertThat(leader.isLeader(BETA)).isTrue();
	}

	@Test
	void leaderWhoseSessionsAreAllKilledStepsDownAndAFollowerTakesOver() throws Exception {
		NodeProcess leader = electLeaderOfBoth();
		long term = this.cluster.lease(ALPHA).orElseThrow().term();
		long killedAt = System.nanoTime();
		assertThat(this.cluster.terminateSessions(leader.nodeId())).isPositive();
		assertStepsDownAndAFollowerTakesOver(leader, term, killedAt);
	}

	private void assertStepsDownAndAFollowerTakesOver(NodeProcess leader, long term, long killedAt) {
		NodeEvent revoked = leader.awaitEvent("revoke of " + ALPHA,
				(event) -> event.is(Type.REVOKED, ALPHA) && event.term() == term, Duration.ofSeconds(2));
		assertThat(revoked.reason()).isEqualTo("SESSION_LOST");
		NodeEvent grant = this.cluster.awaitGrant(ALPHA, term, Duration.ofSeconds(2));
		System.out.printf(
				"session killed -> old leader's revoke %d ms, successor's grant %d ms: both believed they "
						+ "led for %d ms%n",
				(revoked.nanoTime() - killedAt) / 1_000_000, (grant.nanoTime() - killedAt) / 1_000_000,
				Math.max(0, revoked.nanoTime() - grant.nanoTime()) / 1_000_000);
		assertThat(Duration.ofNanos(revoked.nanoTime() - killedAt)).isLessThan(Duration.ofMillis(500));
		assertThat(Duration.ofNanos(revoked.nanoTime() - grant.nanoTime()))
			.as("both believed they led for at most the fault harness's bound")
			.isLessThan(Duration.ofMillis(500));
		assertThat(leader.isAlive()).isTrue();
		List<Tenure> tenures = this.cluster.tenures(ALPHA);
		assertThat(tenures).extracting(Tenure::term).doesNotHaveDuplicates();
	}

	@Test
	void gracefulStopHandsABoundLeaseOverAfterTheLeaderSteppedDown() throws Exception {
		NodeProcess leader = electLeaderOfBoth();
		long term = this.cluster.lease(ALPHA).orElseThrow().term();
		leader.sigterm();
		NodeEvent grant = this.cluster.awaitGrant(ALPHA, term, Duration.ofSeconds(2));
		NodeEvent revoked = leader.awaitEvent("revoke of " + ALPHA,
				(event) -> event.is(Type.REVOKED, ALPHA) && event.term() == term, Duration.ofSeconds(2));
		assertThat(revoked.reason()).isEqualTo("SHUTDOWN");
		assertThat(revoked.nanoTime()).as("revoke before the successor's grant").isLessThan(grant.nanoTime());
		this.cluster.assertTenuresDoNotOverlap(ALPHA);
	}

	/**
	 * Starts one node, waits until it leads both groups and its lease of {@code alpha} is
	 * bound, then starts two followers and waits until both follow it.
	 * @return the leader
	 */
	private NodeProcess electLeaderOfBoth() {
		NodeProcess leader = this.cluster.start("node-a");
		assertThat(this.cluster.awaitSingleLeader(ALPHA, ELECTION_TIMEOUT)).isSameAs(leader);
		assertThat(this.cluster.awaitSingleLeader(BETA, ELECTION_TIMEOUT)).isSameAs(leader);
		await("lease of alpha bound to its holder's session").atMost(Duration.ofSeconds(5))
			.pollInterval(Duration.ofMillis(20))
			.until(() -> bound(ALPHA));
		for (String follower : List.of("node-b", "node-c")) {
			NodeProcess node = this.cluster.start(follower);
			node.awaitEvent("leader of alpha seen",
					(event) -> event.is(Type.CHANGED, ALPHA) && leader.nodeId().equals(event.node()), ELECTION_TIMEOUT);
		}
		// A follower waits on the server once a heartbeat read the lease.
		await("both followers waiting on the server for the end of the holder's session").atMost(Duration.ofSeconds(5))
			.pollInterval(Duration.ofMillis(20))
			.until(() -> count(followersWaitingSql()) == 2);
		return leader;
	}

	/**
	 * Returns the query that counts the sessions waiting for the end of the session of
	 * {@code alpha}'s holder.
	 * @return the query
	 */
	String followersWaitingSql() {
		return "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
				+ "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())";
	}

	private long count(String sql) throws SQLException {
		try (Connection connection = this.cluster.dataSource().getConnection();
				Statement statement = connection.createStatement();
				ResultSet rows = statement.executeQuery(sql)) {
			rows.next();
			return rows.getLong(1);
		}
	}

	private boolean bound(String group) throws SQLException {
		try (Connection connection = this.cluster.dataSource().getConnection();
				PreparedStatement statement = connection
					.prepareStatement("SELECT " + sessionColumn() + " FROM leader_leases WHERE group_name = ?")) {
			statement.setString(1, group);
			try (ResultSet rows = statement.executeQuery()) {
				return rows.next() && rows.getObject(1) != null;
			}
		}
	}

}
