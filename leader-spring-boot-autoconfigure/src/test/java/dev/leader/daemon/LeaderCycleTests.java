package dev.leader.daemon;

import java.time.Duration;
import java.util.Map;
import java.util.Set;

import dev.leader.FencingToken;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Tests for {@link LeaderCycle} against an {@link InMemoryDaemonStore} that checks the
 * leader's token as the lease guard does. No database.
 */
class LeaderCycleTests {

	private static final DaemonSettings SETTINGS = new DaemonSettings("default", Duration.ofSeconds(30),
			Duration.ofSeconds(30), 2, Duration.ofSeconds(10));

	private static final FencingToken TERM_7 = new FencingToken("default", 7);

	private final InMemoryDaemonStore store = new InMemoryDaemonStore().leaseHeldBy("a", 7)
		.member(new Member("a", Set.of("d1", "d2"), true))
		.member(new Member("b", Set.of("d1", "d2"), true));

	private final TestLocalNode node = new TestLocalNode("a").leading(TERM_7);

	private final LeaderCycle leader = new LeaderCycle(this.node, this.store, SETTINGS);

	@Test
	void leaderAssignsEachDaemonToTheLeastLoadedNodeUnderItsTerm() {
		assertThat(lead(TERM_7)).isTrue();
		assertThat(this.store.applied()).containsExactly("assign d1 a 1", "assign d2 b 1");
		assertThat(this.store.assignment("d1")).get().extracting(Assignment::term).isEqualTo(7L);
		assertThat(lead(TERM_7)).as("a second cycle on the new state").isFalse();
	}

	@Test
	void leaderWithAStaleTokenChangesNothing() {
		this.store.leaseHeldBy("b", 8).assignment("d1", "c", AssignmentState.ACTIVE, 1);
		assertThat(lead(TERM_7)).isFalse();
		assertThat(this.store.applied()).isEmpty();
		assertThat(this.store.assignment("d1")).get().extracting(Assignment::node).isEqualTo("c");
		assertThat(this.leader.moves()).isEmpty();
	}

	@Test
	void leaderStopsApplyingItsPlanOnceItNoLongerLeads() {
		this.node.losingLeadershipAfter(1);
		assertThat(lead(TERM_7)).isTrue();
		assertThat(this.store.applied()).containsExactly("assign d1 a 1");
	}

	@Test
	void daemonOfADeadNodeIsReclaimedAndReassignedInTheSameCycleAndCountedByCause() {
		this.store.member(new Member("c", Set.of("d1"), false)).assignment("d1", "c", AssignmentState.ACTIVE, 3);
		assertThat(lead(TERM_7)).isTrue();
		assertThat(this.store.applied()).containsExactly("reclaim d1 c 3", "assign d1 a 4", "assign d2 b 1");
		assertThat(this.leader.moves()).containsExactly(Map.entry("node_dead", 1L));
	}

	@Test
	void rebalanceWaitsForTheSettleWindowWhichStartsAgainWithEachTerm() {
		this.store.assignment("d1", "a", AssignmentState.ACTIVE, 1).assignment("d2", "a", AssignmentState.ACTIVE, 1);
		assertThat(lead(TERM_7)).isFalse();
		this.store.advance(SETTINGS.settleWindow());
		this.leader.notLeading();
		FencingToken term8 = new FencingToken("default", 8);
		this.store.leaseHeldBy("a", 8);
		this.node.leading(term8);
		assertThat(lead(term8)).as("first cycle of a new term").isFalse();
		this.store.advance(SETTINGS.settleWindow());
		assertThat(lead(term8)).isTrue();
		assertThat(this.store.applied()).containsExactly("revoke d2 a 1");
		assertThat(this.leader.moves()).containsExactly(Map.entry("rebalance", 1L));
	}

	@Test
	void moveCausesNameEveryRevokeAndReclaimCause() {
		assertThat(LeaderCycle.moveCauses()).containsExactlyInAnyOrder("rebalance", "requested", "drained", "node_dead",
				"ack_timeout", "drain_timeout");
	}

	private boolean lead(FencingToken token) {
		return this.leader.lead(this.store.read(Duration.ofSeconds(4)), token);
	}

}
