package dev.leader.lease;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

import dev.leader.test.Cluster;
import dev.leader.test.Cluster.Lease;
import dev.leader.test.NodeEvent;
import dev.leader.test.NodeEvent.Type;
import dev.leader.test.NodeProcess;
import dev.leader.test.RepeatedFault;
import dev.leader.test.TestNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Leadership across real processes: every node is a JVM of its own
 * ({@link dev.leader.test.TestNode}) on one PostgreSQL schema, and is killed, stopped or
 * cut off from the database for real.
 */
class MultiProcessLeadershipTests {

	/**
	 * Fast timings. The safety margin is wider than clock drift needs, because these
	 * tests compare the times at which nodes print their events, and a revoke is printed
	 * up to ~100 ms after the window closed on a busy machine.
	 */
	private static final LeaseSettings FAST = new LeaseSettings(Duration.ofSeconds(2), Duration.ofMillis(500),
			Duration.ofMillis(500), Duration.ofMillis(300), Duration.ofSeconds(2), Duration.ofSeconds(3));

	private static final String ALPHA = "alpha";

	private static final String BETA = "beta";

	private static final List<String> GROUPS = List.of(ALPHA, BETA);

	private static final Duration ELECTION_TIMEOUT = Duration.ofSeconds(5);

	private static final Duration TERMINATION_PERIOD = Duration.ofMillis(100);

	/**
	 * How much later than its safe window closes a node may print the revoke: the
	 * watchdog and event threads must be scheduled first.
	 */
	private static final Duration STEP_DOWN_TOLERANCE = Duration.ofMillis(200);

	@RegisterExtension
	final Cluster cluster = TestNode.cluster(FAST, ALPHA, BETA);

	@Test
	void threeNodesElectExactlyOneLeaderPerGroup() {
		List<NodeProcess> nodes = this.cluster.startAll("node-a", "node-b", "node-c");
		Map<String, NodeProcess> leaders = new LinkedHashMap<>();
		for (String group : GROUPS) {
			leaders.put(group, this.cluster.awaitSingleLeader(group, ELECTION_TIMEOUT));
		}
		await().during(FAST.renewInterval().multipliedBy(2))
			.atMost(FAST.renewInterval().multipliedBy(4))
			.until(() -> GROUPS.stream()
				.allMatch((group) -> this.cluster.leaders(group).equals(List.of(leaders.get(group)))));
		for (String group : GROUPS) {
			NodeProcess leader = leaders.get(group);
			NodeEvent grant = leader.lastEvent((event) -> event.is(Type.GRANTED, group)).orElseThrow();
			for (NodeProcess node : nodes) {
				if (node != leader) {
					assertThat(node.lastEvent((event) -> event.isLeadershipOf(group)).map(NodeEvent::type))
						.as("last grant or revoke of %s on %s", group, node.nodeId())
						.isIn(Optional.empty(), Optional.of(Type.REVOKED));
				}
				node.awaitEvent("CHANGED " + group + " to " + leader.nodeId(),
						(event) -> isLatestChange(node, event, group, grant.term(), leader.nodeId()),
						FAST.renewInterval().multipliedBy(2));
			}
			Lease lease = this.cluster.lease(group).orElseThrow();
			assertThat(lease.isHeld()).isTrue();
			assertThat(lease.holder()).isEqualTo(leader.nodeId());
			assertThat(lease.term()).isEqualTo(grant.term());
			this.cluster.assertTenuresDoNotOverlap(group);
		}
	}

	@Test
	void followerTakesOverWithinLeasePlusHalfASecondAfterLeaderIsKilled() {
		NodeProcess leader = electLeaderOfAlpha();
		for (TakeOver takeOver : takeOversAfter(leader, NodeProcess::kill9, FAST.duration().plusSeconds(2))) {
			System.out.printf("Failover of %s after kill -9: %d ms (lease %d ms), term %d -> %d%n", takeOver.group(),
					takeOver.after().toMillis(), FAST.duration().toMillis(), takeOver.term(), takeOver.grant().term());
			assertThat(takeOver.after()).isLessThan(FAST.duration().plusMillis(500));
			assertThat(takeOver.grant().node()).isNotEqualTo(leader.nodeId());
			NodeProcess successor = this.cluster.awaitSingleLeader(takeOver.group(), ELECTION_TIMEOUT);
			assertThat(successor.nodeId()).isEqualTo(takeOver.grant().node());
			assertThat(this.cluster.lease(takeOver.group()).orElseThrow().term()).isEqualTo(takeOver.grant().term());
		}
		awaitEveryOtherNodeSeesLeave(leader, FAST.nodeExpiry().plusSeconds(1));
		GROUPS.forEach(this.cluster::assertTenuresDoNotOverlap);
	}

	@Test
	void leaderHandsOverWithinASecondWhenStoppedGracefully() {
		NodeProcess leader = electLeaderOfAlpha();
		List<TakeOver> takeOvers = takeOversAfter(leader, NodeProcess::sigterm, Duration.ofSeconds(2));
		for (TakeOver takeOver : takeOvers) {
			System.out.printf("Hand-over of %s after SIGTERM: %d ms, term %d -> %d%n", takeOver.group(),
					takeOver.after().toMillis(), takeOver.term(), takeOver.grant().term());
			assertThat(takeOver.after()).isLessThan(Duration.ofSeconds(1));
			assertThat(takeOver.grant().node()).isNotEqualTo(leader.nodeId());
		}
		assertThat(leader.awaitExit(Duration.ofSeconds(10))).as("exit code after SIGTERM").isEqualTo(143);
		List<NodeEvent> events = leader.events();
		assertThat(events).last().extracting(NodeEvent::type).isEqualTo(Type.STOPPED);
		for (TakeOver takeOver : takeOvers) {
			assertThat(events).filteredOn((event) -> event.is(Type.REVOKED, takeOver.group()))
				.singleElement()
				.satisfies((revoked) -> {
					assertThat(revoked.term()).isEqualTo(takeOver.term());
					assertThat(revoked.reason()).isEqualTo("SHUTDOWN");
				});
			NodeProcess successor = this.cluster.awaitSingleLeader(takeOver.group(), ELECTION_TIMEOUT);
			assertThat(this.cluster.lease(takeOver.group()).orElseThrow().holder()).isEqualTo(successor.nodeId());
		}
		awaitEveryOtherNodeSeesLeave(leader, FAST.renewInterval().plusSeconds(1));
		// The engine releases only once its revoke was delivered, so the leader printed
		// it before any grant.
		GROUPS.forEach(this.cluster::assertTenuresDoNotOverlap);
	}

	@Test
	void leaderCutOffFromTheDatabaseStepsDownInsideItsSafeWindow() {
		this.cluster.startAll("node-a", "node-b", "node-c");
		NodeProcess leader = this.cluster.awaitSingleLeader(ALPHA, ELECTION_TIMEOUT);
		long term = leader.lastEvent((event) -> event.is(Type.GRANTED, ALPHA)).orElseThrow().term();
		Duration faultTimeout = FAST.duration().plusSeconds(1);
		AtomicReference<Lease> lastRenewed = new AtomicReference<>();
		long faultsBeganAt = System.nanoTime();
		NodeEvent revoked;
		// Terminating sessions alone is not enough: the pool opens a fresh session on
		// demand, and a renewal on it often gets through between two terminations.
		// Refusing new sessions makes every round trip fail.
		this.cluster.refuseConnections(leader.nodeId());
		try (RepeatedFault fault = RepeatedFault.start("terminate sessions of " + leader.nodeId(), TERMINATION_PERIOD,
				(int) (faultTimeout.toMillis() / TERMINATION_PERIOD.toMillis()) + 1, () -> {
					this.cluster.terminateSessions(leader.nodeId());
					this.cluster.lease(ALPHA)
						.filter((lease) -> lease.term() == term && leader.nodeId().equals(lease.holder()))
						.ifPresent(lastRenewed::set);
				})) {
			revoked = leader.awaitEvent("REVOKED " + ALPHA, (event) -> event.is(Type.REVOKED, ALPHA), faultTimeout);
		}
		finally {
			this.cluster.allowConnections(leader.nodeId());
		}
		Lease renewed = lastRenewed.get();
		assertThat(renewed).as("lease of term %d as last renewed", term).isNotNull();
		long renewedAt = renewed.toNanoTime(renewed.renewedAt());
		System.out.printf("Leader cut off from the database stepped down (%s) %d ms after the fault began, %d ms "
				+ "after its last renewal (safe window %d ms), %d ms before its lease expired in the database%n",
				revoked.reason(), (revoked.nanoTime() - faultsBeganAt) / 1_000_000,
				(revoked.nanoTime() - renewedAt) / 1_000_000, FAST.safeWindow().toMillis(),
				(renewed.toNanoTime(renewed.expiresAt()) - revoked.nanoTime()) / 1_000_000);
		assertThat(revoked.term()).isEqualTo(term);
		assertThat(revoked.reason()).isIn("ERROR", "EXPIRED");
		assertThat(Duration.ofNanos(revoked.nanoTime() - faultsBeganAt)).isLessThan(faultTimeout);
		// The renewal was sent before the database stamped it, so the window closed no
		// later than this.
		assertThat(Duration.ofNanos(revoked.nanoTime() - renewedAt))
			.isLessThan(FAST.safeWindow().plus(STEP_DOWN_TOLERANCE));
		assertThat(revoked.nanoTime()).as("revoke before the lease expired in the database")
			.isLessThan(renewed.toNanoTime(renewed.expiresAt()));
		assertThat(leader.isAlive()).isTrue();
		for (String group : GROUPS) {
			this.cluster.awaitSingleLeader(group, ELECTION_TIMEOUT);
			this.cluster.assertTenuresDoNotOverlap(group);
		}
	}

	/**
	 * Starts three nodes and waits for a single leader of every group.
	 * @return the leader of {@link #ALPHA}
	 */
	private NodeProcess electLeaderOfAlpha() {
		this.cluster.startAll("node-a", "node-b", "node-c");
		GROUPS.forEach((group) -> this.cluster.awaitSingleLeader(group, ELECTION_TIMEOUT));
		return this.cluster.leaders(ALPHA).get(0);
	}

	/**
	 * Stops a leader and waits, group by group, until another node is granted each group
	 * the leader held.
	 * @param leader the leader
	 * @param stop how it is stopped
	 * @param timeout how long each grant may take at most
	 * @return the take-overs, one per group the leader held
	 */
	private List<TakeOver> takeOversAfter(NodeProcess leader, Consumer<NodeProcess> stop, Duration timeout) {
		List<NodeEvent> held = GROUPS.stream()
			.filter(leader::isLeader)
			.map((group) -> leader.lastEvent((event) -> event.is(Type.GRANTED, group)).orElseThrow())
			.toList();
		long stoppedAt = System.nanoTime();
		stop.accept(leader);
		List<TakeOver> takeOvers = new ArrayList<>();
		for (NodeEvent grant : held) {
			String group = Objects.requireNonNull(grant.group());
			NodeEvent next = this.cluster.awaitGrant(group, grant.term(), timeout);
			takeOvers.add(new TakeOver(group, grant.term(), next, Duration.ofNanos(next.nanoTime() - stoppedAt)));
		}
		return takeOvers;
	}

	private void awaitEveryOtherNodeSeesLeave(NodeProcess gone, Duration timeout) {
		for (NodeProcess node : this.cluster.nodes()) {
			if (node != gone) {
				node.awaitEvent("LEFT " + gone.nodeId(),
						(event) -> event.type() == Type.LEFT && gone.nodeId().equals(event.node()), timeout);
			}
		}
	}

	private static boolean isLatestChange(NodeProcess node, NodeEvent event, String group, long term, String leader) {
		return event.is(Type.CHANGED, group) && event.term() == term && leader.equals(event.node())
				&& node.lastEvent((change) -> change.is(Type.CHANGED, group)).orElseThrow().equals(event);
	}

	/**
	 * Another node's grant of a group after its leader was stopped.
	 *
	 * @param group the group
	 * @param term the stopped leader's term
	 * @param grant the first grant with a higher term
	 * @param after how long after the stop the grant was printed
	 */
	private record TakeOver(String group, long term, NodeEvent grant, Duration after) {

	}

}
