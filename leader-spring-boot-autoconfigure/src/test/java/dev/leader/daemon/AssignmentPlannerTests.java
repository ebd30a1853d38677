package dev.leader.daemon;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;

import dev.leader.daemon.AssignmentPlanner.Action;
import dev.leader.daemon.AssignmentPlanner.Assign;
import dev.leader.daemon.AssignmentPlanner.Forget;
import dev.leader.daemon.AssignmentPlanner.MoveCause;
import dev.leader.daemon.AssignmentPlanner.Reclaim;
import dev.leader.daemon.AssignmentPlanner.ReclaimCause;
import dev.leader.daemon.AssignmentPlanner.Revoke;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Tests for {@link AssignmentPlanner}, a pure function.
 */
class AssignmentPlannerTests {

	private static final Instant NOW = Instant.parse("2030-01-01T00:00:00Z");

	private static final DaemonSettings SETTINGS = new DaemonSettings("default", Duration.ofSeconds(30),
			Duration.ofSeconds(20), 2, Duration.ofSeconds(10));

	private static final Duration POLL = Duration.ofSeconds(1);

	private static final Instant SETTLED = NOW.minus(SETTINGS.settleWindow());

	private static final Set<String> SEVEN = Set.of("d1", "d2", "d3", "d4", "d5", "d6", "d7");

	private static final Set<String> THREE = Set.of("d1", "d2", "d3");

	private static final Set<String> FOUR = Set.of("d1", "d2", "d3", "d4");

	@Test
	void unassignedDaemonsGoToTheLeastLoadedNodeInNameOrderWithTiesToTheLowestNodeId() {
		List<Action> plan = plan(List.of(node("c", SEVEN), node("a", SEVEN), node("b", SEVEN)), List.of(), SETTLED);
		assertThat(plan).containsExactly(new Assign("d1", "a", 0), new Assign("d2", "b", 0), new Assign("d3", "c", 0),
				new Assign("d4", "a", 0), new Assign("d5", "b", 0), new Assign("d6", "c", 0), new Assign("d7", "a", 0));
	}

	@Test
	void sevenDaemonsOnThreeNodesEndThreeTwoTwoWhenSomeAreAlreadyAssigned() {
		List<Assignment> assignments = List.of(active("d1", "b", 1), active("d2", "b", 1), active("d3", "b", 1));
		List<Action> plan = plan(List.of(node("a", SEVEN), node("b", SEVEN), node("c", SEVEN)), assignments, SETTLED);
		assertThat(plan).containsExactly(new Assign("d4", "a", 0), new Assign("d5", "c", 0), new Assign("d6", "a", 0),
				new Assign("d7", "c", 0));
	}

	@Test
	void daemonGoesOnlyToNodesThatAdvertiseIt() {
		List<Action> plan = plan(List.of(node("a", Set.of("d1")), node("b", Set.of("d1", "d2"))),
				List.of(active("d1", "b", 3)), SETTLED);
		assertThat(plan).containsExactly(new Assign("d2", "b", 0));
	}

	@Test
	void daemonThatNoLiveNodeAdvertisesStaysUnassigned() {
		List<Member> nodes = List.of(node("a", Set.of("d1")), new Member("gone", Set.of("d2"), false));
		assertThat(plan(nodes, List.of(deleted("d2", "gone", 4)), SETTLED)).containsExactly(new Assign("d1", "a", 0));
	}

	@Test
	void reassignmentOfADeletedDaemonNamesItsLastGeneration() {
		assertThat(plan(List.of(node("a", Set.of("d1"))), List.of(deleted("d1", "x", 7)), SETTLED))
			.containsExactly(new Assign("d1", "a", 7));
	}

	@Test
	void assignmentsOfDeadNodesAreReclaimedAndReassignedInTheSameCycle() {
		List<Member> nodes = List.of(node("a", SEVEN), new Member("b", SEVEN, false));
		List<Assignment> assignments = List.of(active("d1", "b", 2), active("d2", "gone", 5), active("d3", "a", 1));
		assertThat(plan(nodes, assignments, SETTLED)).containsExactly(
				new Reclaim("d1", "b", 2, AssignmentState.ACTIVE, ReclaimCause.NODE_DEAD),
				new Reclaim("d2", "gone", 5, AssignmentState.ACTIVE, ReclaimCause.NODE_DEAD), new Assign("d1", "a", 2),
				new Assign("d2", "a", 5), new Assign("d4", "a", 0), new Assign("d5", "a", 0), new Assign("d6", "a", 0),
				new Assign("d7", "a", 0));
	}

	@Test
	void assigningPastTheAckTimeoutIsReclaimedAndGivenToAnotherNode() {
		List<Member> nodes = List.of(node("a", Set.of("d1")), node("b", Set.of("d1")));
		Assignment late = new Assignment("d1", "a", AssignmentState.ASSIGNING, 3, 1, NOW.minus(SETTINGS.ackTimeout()));
		assertThat(plan(nodes, List.of(late), SETTLED)).containsExactly(
				new Reclaim("d1", "a", 3, AssignmentState.ASSIGNING, ReclaimCause.ACK_TIMEOUT),
				new Assign("d1", "b", 3));
	}

	@Test
	void assigningWithinTheAckTimeoutIsLeftAlone() {
		Assignment pending = new Assignment("d1", "a", AssignmentState.ASSIGNING, 3, 1,
				NOW.minus(SETTINGS.ackTimeout()).plusMillis(1));
		assertThat(plan(List.of(node("a", Set.of("d1")), node("b", Set.of("d1"))), List.of(pending), SETTLED))
			.isEmpty();
	}

	@Test
	void daemonReclaimedForATimeoutFromItsOnlyNodeWaitsForTheNextCycle() {
		Assignment late = new Assignment("d1", "a", AssignmentState.ASSIGNING, 3, 1, NOW.minusSeconds(60));
		assertThat(plan(List.of(node("a", Set.of("d1"))), List.of(late), SETTLED))
			.containsExactly(new Reclaim("d1", "a", 3, AssignmentState.ASSIGNING, ReclaimCause.ACK_TIMEOUT));
	}

	@Test
	void revokingPastTheDrainTimeoutPlusOneCycleIsReclaimed() {
		List<Member> nodes = List.of(node("a", Set.of("d1")), node("b", Set.of("d1")));
		Duration limit = SETTINGS.drainTimeout().plus(POLL);
		Assignment draining = new Assignment("d1", "a", AssignmentState.REVOKING, 3, 1, NOW.minus(limit).plusMillis(1));
		assertThat(plan(nodes, List.of(draining), SETTLED)).isEmpty();
		Assignment stuck = new Assignment("d1", "a", AssignmentState.REVOKING, 3, 1, NOW.minus(limit));
		assertThat(plan(nodes, List.of(stuck), SETTLED)).containsExactly(
				new Reclaim("d1", "a", 3, AssignmentState.REVOKING, ReclaimCause.DRAIN_TIMEOUT),
				new Assign("d1", "b", 3));
	}

	@Test
	void loadsThatDifferByMoreThanOneAreRebalancedWithinTheMoveCap() {
		List<Assignment> assignments = new ArrayList<>();
		for (String daemon : SEVEN) {
			assignments.add(active(daemon, "a", 1));
		}
		List<Action> plan = plan(List.of(node("a", SEVEN), node("b", SEVEN), node("c", SEVEN)), assignments, SETTLED);
		assertThat(plan).containsExactly(new Revoke("d7", "a", 1, "b"), new Revoke("d6", "a", 1, "c"));
	}

	@Test
	void loadsThatDifferByOneAreLeftAlone() {
		List<Assignment> assignments = List.of(active("d1", "a", 1), active("d2", "a", 1), active("d3", "b", 1));
		assertThat(plan(List.of(node("a", THREE), node("b", THREE)), assignments, SETTLED)).isEmpty();
	}

	@Test
	void rebalanceMovesOnlyDaemonsTheLessLoadedNodeCanRun() {
		List<Assignment> assignments = List.of(active("d1", "a", 1), active("d2", "a", 1), active("d3", "a", 1));
		assertThat(plan(List.of(node("a", Set.of("d1", "d2", "d3")), node("b", Set.of("d1"))), assignments, SETTLED))
			.containsExactly(new Revoke("d1", "a", 1, "b"));
		assertThat(plan(List.of(node("a", Set.of("d1", "d2", "d3")), node("b", Set.of())), assignments, SETTLED))
			.isEmpty();
	}

	@Test
	void noRebalanceInsideTheSettleWindowAfterAMembershipChange() {
		List<Assignment> assignments = List.of(active("d1", "a", 1), active("d2", "a", 1), active("d3", "a", 1));
		List<Member> nodes = List.of(node("a", THREE), node("b", THREE));
		assertThat(plan(nodes, assignments, NOW.minus(SETTINGS.settleWindow()).plusMillis(1))).isEmpty();
		assertThat(plan(nodes, assignments, NOW.minus(SETTINGS.settleWindow()))).hasSize(1);
	}

	@Test
	void noRebalanceWhileAnAssignmentIsInFlight() {
		List<Member> nodes = List.of(node("a", FOUR), node("b", FOUR));
		List<Assignment> revoking = List.of(active("d1", "a", 1), active("d2", "a", 1), active("d3", "a", 1),
				new Assignment("d4", "a", AssignmentState.REVOKING, 1, 1, NOW));
		assertThat(plan(nodes, revoking, SETTLED)).isEmpty();
		List<Assignment> assigning = List.of(active("d1", "a", 1), active("d2", "a", 1), active("d3", "a", 1),
				new Assignment("d4", "b", AssignmentState.ASSIGNING, 1, 1, NOW));
		assertThat(plan(nodes, assigning, SETTLED)).isEmpty();
	}

	@Test
	void thePlanIsTheSameWhateverTheOrderOfTheInput() {
		List<Member> nodes = List.of(node("a", SEVEN), node("b", SEVEN), node("c", SEVEN));
		List<Assignment> assignments = List.of(active("d3", "a", 1), active("d1", "a", 4), deleted("d2", "b", 2));
		List<Action> plan = plan(nodes, assignments, SETTLED);
		assertThat(plan(reversed(nodes), reversed(assignments), SETTLED)).isEqualTo(plan);
	}

	@Test
	void drainedNodeGetsNothingAndItsDaemonsAreRevokedTowardTheLeastLoadedOtherNodeIgnoringTheCapAndSettleWindow() {
		Member drained = new Member("a", FOUR, true, true);
		List<Assignment> assignments = List.of(active("d1", "a", 1), active("d2", "a", 1), active("d3", "a", 1),
				active("d4", "b", 1));
		DaemonSnapshot snapshot = new DaemonSnapshot(NOW, List.of(drained, node("b", FOUR), node("c", THREE)),
				assignments);
		assertThat(AssignmentPlanner.plan(snapshot, NOW, SETTINGS, POLL)).containsExactly(
				new Revoke("d1", "a", 1, "c", MoveCause.DRAINED), new Revoke("d2", "a", 1, "b", MoveCause.DRAINED),
				new Revoke("d3", "a", 1, "c", MoveCause.DRAINED));
		DaemonSnapshot later = new DaemonSnapshot(NOW, List.of(drained, node("b", Set.of("d1", "d4"))),
				List.of(deleted("d1", "a", 1), active("d4", "b", 1)));
		assertThat(AssignmentPlanner.plan(later, NOW, SETTINGS, POLL)).containsExactly(new Assign("d1", "b", 1));
	}

	@Test
	void daemonThatOnlyADrainedNodeCanRunStaysThere() {
		DaemonSnapshot snapshot = new DaemonSnapshot(NOW,
				List.of(new Member("a", Set.of("d1"), true, true), node("b", Set.of("d2"))),
				List.of(active("d1", "a", 1), active("d2", "b", 1)));
		assertThat(AssignmentPlanner.plan(snapshot, SETTLED, SETTINGS, POLL)).isEmpty();
	}

	@Test
	void moveRequestRevokesTheDaemonTowardTheRequestedNodeAndItsReassignmentCarriesTheRequest() {
		DaemonRequest move = new DaemonRequest(DaemonRequest.Kind.MOVE, "d1", "c", NOW.minusSeconds(1));
		DaemonSnapshot snapshot = new DaemonSnapshot(NOW,
				List.of(node("a", Set.of("d1")), node("b", Set.of("d1")), node("c", Set.of("d1"))),
				List.of(active("d1", "a", 4)), List.of(move));
		assertThat(AssignmentPlanner.plan(snapshot, NOW, SETTINGS, POLL))
			.containsExactly(new Revoke("d1", "a", 4, "c", MoveCause.REQUESTED));
		DaemonSnapshot drained = new DaemonSnapshot(NOW,
				List.of(node("a", Set.of("d1")), node("b", Set.of("d1")), node("c", Set.of("d1"))),
				List.of(deleted("d1", "a", 4)), List.of(move));
		assertThat(AssignmentPlanner.plan(drained, NOW, SETTINGS, POLL))
			.containsExactly(new Assign("d1", "c", 4, move.requestedAt()));
	}

	@Test
	void moveRequestWithoutANodeGoesToTheLeastLoadedOtherNodeAndOneThatCannotBeCarriedOutIsForgotten() {
		DaemonRequest anywhere = new DaemonRequest(DaemonRequest.Kind.MOVE, "d1", null, NOW);
		DaemonSnapshot snapshot = new DaemonSnapshot(NOW, List.of(node("a", Set.of("d1")), node("b", Set.of("d1"))),
				List.of(deleted("d1", "a", 2)), List.of(anywhere));
		assertThat(AssignmentPlanner.plan(snapshot, NOW, SETTINGS, POLL))
			.containsExactly(new Assign("d1", "b", 2, anywhere.requestedAt()));
		DaemonSnapshot alone = new DaemonSnapshot(NOW, List.of(node("a", Set.of("d1"))), List.of(active("d1", "a", 2)),
				List.of(anywhere));
		assertThat(AssignmentPlanner.plan(alone, NOW, SETTINGS, POLL)).containsExactly(new Forget(anywhere));
	}

	@Test
	void rebalanceRequestLiftsTheSettleWindowOnceNothingIsInFlight() {
		DaemonRequest rebalance = new DaemonRequest(DaemonRequest.Kind.REBALANCE, "", null, NOW);
		List<Assignment> assignments = List.of(active("d1", "a", 1), active("d2", "a", 1), active("d3", "a", 1));
		List<Member> nodes = List.of(node("a", THREE), node("b", THREE));
		assertThat(AssignmentPlanner.plan(new DaemonSnapshot(NOW, nodes, assignments), NOW, SETTINGS, POLL)).isEmpty();
		assertThat(AssignmentPlanner.plan(new DaemonSnapshot(NOW, nodes, assignments, List.of(rebalance)), NOW,
				SETTINGS, POLL))
			.containsExactly(new Revoke("d3", "a", 1, "b"), new Forget(rebalance));
	}

	private static List<Action> plan(List<Member> nodes, List<Assignment> assignments, Instant changedAt) {
		return AssignmentPlanner.plan(new DaemonSnapshot(NOW, nodes, assignments), changedAt, SETTINGS, POLL);
	}

	private static <T> List<T> reversed(List<T> list) {
		List<T> reversed = new ArrayList<>(list);
		Collections.reverse(reversed);
		return reversed;
	}

	private static Member node(String id, Set<String> daemons) {
		return new Member(id, daemons, true);
	}

	private static Assignment active(String daemon, String node, long generation) {
		return new Assignment(daemon, node, AssignmentState.ACTIVE, generation, 1, NOW.minusSeconds(100));
	}

	private static Assignment deleted(String daemon, String node, long generation) {
		return new Assignment(daemon, node, AssignmentState.DELETED, generation, 1, NOW.minusSeconds(100));
	}

}
