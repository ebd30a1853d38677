package dev.leader.daemon;

import java.time.Duration;
import java.util.Map;
import java.util.Set;

import dev.leader.FencingToken;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * Tests for what {@link DaemonOperations} reports as stuck and how it checks a move,
 * against an {@link InMemoryDaemonStore}. No database.
 */
class StuckDaemonsTests {

	private static final DaemonSettings SETTINGS = new DaemonSettings("default", Duration.ofSeconds(30),
			Duration.ofSeconds(20), 2, Duration.ZERO);

	private final InMemoryDaemonStore store = new InMemoryDaemonStore()
		.member(new Member("a", Set.of("d1", "d2", "d3"), true))
		.member(new Member("b", Set.of("d1"), false));

	private final TestLocalNode node = new TestLocalNode("a").leading(new FencingToken("default", 1));

	private final DaemonOperations operations = new DaemonOperations(this.node, this.store, SETTINGS);

	@Test
	void leaderReportsDaemonsPastTheirTimeoutsAndAdvertisedDaemonsThatRunNowhere() {
		this.store.assignment("d1", "a", AssignmentState.ASSIGNING, 1)
			.assignment("d2", "a", AssignmentState.REVOKING, 1);
		assertThat(stuck()).containsOnlyKeys("d3");
		this.store.advance(SETTINGS.ackTimeout());
		assertThat(stuck()).containsEntry("d1", "ASSIGNING on a for 30000 ms, past the ack timeout of 30000 ms")
			.containsEntry("d2", "REVOKING on a for 30000 ms, past the drain timeout of 20000 ms")
			.containsEntry("d3", "unassigned: no live, undrained node that has it");
	}

	@Test
	void otherNodesReportNothingStuck() {
		this.node.leading(null);
		assertThat(stuck()).isEmpty();
		assertThat(this.operations.stuck(null)).isEmpty();
	}

	@Test
	void moveToADeadNodeIsRefusedAndNothingIsRecorded() {
		assertThatIllegalArgumentException().isThrownBy(() -> this.operations.requestMove("d1", "b"))
			.withMessage("Cannot move 'd1' to node 'b': it is dead");
		assertThat(this.store.read(Duration.ofSeconds(4)).requests()).isEmpty();
	}

	private Map<String, String> stuck() {
		return this.operations.stuck(this.store.read(Duration.ofSeconds(4)));
	}

}
