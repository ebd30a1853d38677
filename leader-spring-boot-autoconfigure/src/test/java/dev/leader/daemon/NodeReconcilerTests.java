package dev.leader.daemon;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

import dev.leader.DaemonAgent;
import dev.leader.DaemonAssignedEvent;
import dev.leader.DaemonRevokedEvent;
import dev.leader.DaemonStartedEvent;
import dev.leader.DaemonStoppedEvent;
import dev.leader.DaemonStoppedEvent.Reason;
import dev.leader.FencingToken;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Tests for {@link NodeReconciler} against an {@link InMemoryDaemonStore}: the test
 * thread plays the {@code leader-daemons} thread, and each cycle is a
 * {@link #reconcile()} on a fresh read. No database.
 */
class NodeReconcilerTests {

	private static final DaemonSettings SETTINGS = new DaemonSettings("default", Duration.ofSeconds(30),
			Duration.ofSeconds(1), 2, Duration.ZERO);

	private final InMemoryDaemonStore store = new InMemoryDaemonStore().member(new Member("a", Set.of("d1"), true));

	private final TestLocalNode node = new TestLocalNode("a");

	private final List<Object> events = new CopyOnWriteArrayList<>();

	private final AtomicInteger calls = new AtomicInteger();

	private final AtomicInteger runsEnded = new AtomicInteger();

	private final CountDownLatch stuck = new CountDownLatch(1);

	private DaemonAgent agent = (context) -> {
		this.calls.incrementAndGet();
		context.awaitCancellation(Duration.ofMinutes(1));
	};

	private NodeReconciler reconciler;

	@AfterEach
	void handOver() {
		this.stuck.countDown();
		if (this.reconciler != null) {
			this.reconciler.handOver();
		}
	}

	@Test
	void assignmentAssigningToThisNodeIsAcknowledgedThenStarted() {
		this.store.assignment("d1", "a", AssignmentState.ASSIGNING, 1);
		reconcile();
		assertThat(this.store.assignment("d1")).get().extracting(Assignment::state).isEqualTo(AssignmentState.ACTIVE);
		assertThat(this.reconciler.running()).containsExactly(Map.entry("d1", 1L));
		awaitStarted();
		assertThat(this.events).containsExactly(new DaemonAssignedEvent("d1", 1, "a"),
				new DaemonStartedEvent("d1", 1, "a"));
	}

	@Test
	void failedAcknowledgementIsSentAgainNextCycleAndTheAgentStartsOnlyOnceOneSucceeded() {
		this.store.assignment("d1", "a", AssignmentState.ASSIGNING, 1);
		this.store.failAcknowledgements(1);
		reconcile();
		assertThat(this.store.assignment("d1")).get()
			.extracting(Assignment::state)
			.isEqualTo(AssignmentState.ASSIGNING);
		assertThat(this.reconciler.running()).isEmpty();
		assertThat(this.events).isEmpty();
		reconcile();
		assertThat(this.store.assignment("d1")).get().extracting(Assignment::state).isEqualTo(AssignmentState.ACTIVE);
		assertThat(this.reconciler.running()).containsExactly(Map.entry("d1", 1L));
		awaitStarted();
		assertThat(this.calls).as("calls of the agent").hasValue(1);
	}

	@Test
	void acknowledgementThatCommittedThoughItsReplyWasLostStartsTheAgentWhenAReadShowsItActive() {
		this.store.assignment("d1", "a", AssignmentState.ASSIGNING, 1);
		this.store.loseAcknowledgementReplies(1);
		reconcile();
		assertThat(this.store.assignment("d1")).get().extracting(Assignment::state).isEqualTo(AssignmentState.ACTIVE);
		assertThat(this.reconciler.running()).isEmpty();
		reconcile();
		assertThat(this.reconciler.running()).containsExactly(Map.entry("d1", 1L));
		awaitStarted();
		assertThat(this.store.applied()).containsExactly("acknowledge d1 a 1");
	}

	@Test
	void assignmentReclaimedWhileItsAcknowledgementsFailIsNeverStarted() {
		this.store.leaseHeldBy("leader", 1);
		this.store.assignment("d1", "a", AssignmentState.ASSIGNING, 1);
		this.store.failAcknowledgements(2);
		reconcile();
		reconcile();
		assertThat(this.store.reclaim(new FencingToken("default", 1), "leader", "d1", 1, AssignmentState.ASSIGNING))
			.isTrue();
		assertThat(this.store.assign(new FencingToken("default", 1), "leader", "d1", "b", 1)).isEqualTo(2);
		reconcile();
		assertThat(this.reconciler.running()).isEmpty();
		assertThat(this.calls).as("calls of the agent").hasValue(0);
		assertThat(this.events).isEmpty();
	}

	@Test
	void handOverHandsBackAnAssignmentWhoseAcknowledgementFailed() {
		this.store.assignment("d1", "a", AssignmentState.ASSIGNING, 1);
		this.store.failAcknowledgements(1);
		reconcile();
		this.reconciler.handOver();
		assertThat(this.store.applied()).containsExactly("drain a", "release d1 a 1");
		assertThat(this.calls).hasValue(0);
	}

	@Test
	void revokedDaemonIsCancelledAndHandedBackOnceItsAgentReturned() {
		startD1OnThisNode();
		revokeD1();
		await().atMost(Duration.ofSeconds(5)).until(() -> this.runsEnded.get() == 1);
		reconcile();
		assertThat(this.store.assignment("d1")).get().extracting(Assignment::state).isEqualTo(AssignmentState.DELETED);
		assertThat(this.reconciler.running()).isEmpty();
		assertThat(this.events).containsSubsequence(new DaemonRevokedEvent("d1", 1, "a"),
				new DaemonStoppedEvent("d1", 1, "a", Reason.REVOKED, null));
	}

	@Test
	void revokedDaemonWhoseAgentIgnoresCancellationIsInterruptedAndHandedBackAtTheDrainTimeout() {
		this.agent = (context) -> this.stuck.await();
		startD1OnThisNode();
		revokeD1();
		await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(50)).until(() -> {
			reconcile();
			return this.reconciler.running().isEmpty();
		});
		assertThat(this.store.assignment("d1")).get().extracting(Assignment::state).isEqualTo(AssignmentState.DELETED);
		assertThat(this.events).contains(new DaemonStoppedEvent("d1", 1, "a", Reason.DRAIN_TIMEOUT, null));
	}

	@Test
	void daemonWhoseAssignmentMovedToAnotherNodeIsStoppedAtOnce() {
		startD1OnThisNode();
		this.store.assignment("d1", "b", AssignmentState.ASSIGNING, 2);
		reconcile();
		assertThat(this.reconciler.running()).isEmpty();
		awaitEvent(new DaemonStoppedEvent("d1", 1, "a", Reason.TAKEN_OVER, null));
		assertThat(this.store.assignment("d1")).get().extracting(Assignment::node).isEqualTo("b");
	}

	@Test
	void assignmentThisNodeDoesNotRunIsHandedBackAtOnce() {
		this.store.assignment("d1", "a", AssignmentState.ACTIVE, 4).assignment("d9", "a", AssignmentState.ASSIGNING, 1);
		reconcile();
		assertThat(this.store.applied()).containsExactlyInAnyOrder("release d1 a 4", "release d9 a 1");
		assertThat(this.reconciler.running()).isEmpty();
		assertThat(this.calls).hasValue(0);
	}

	@Test
	void nothingStartsWhileTheLastHeartbeatThatSucceededIsOlderThanTheNodeExpiryMinusTheMargin() {
		this.node.heartbeated(Duration.ofSeconds(3));
		this.store.assignment("d1", "a", AssignmentState.ASSIGNING, 1);
		reconcile();
		assertThat(this.reconciler.running()).isEmpty();
		assertThat(this.store.assignment("d1")).get()
			.extracting(Assignment::state)
			.isEqualTo(AssignmentState.ASSIGNING);
		this.node.heartbeated(null);
		reconcile();
		assertThat(this.reconciler.running()).as("before the first heartbeat").isEmpty();
	}

	@Test
	void watchdogStopsEveryDaemonOnceTheLastHeartbeatIsTooOld() {
		startD1OnThisNode();
		this.reconciler.checkContact();
		assertThat(this.reconciler.running()).containsKey("d1");
		this.node.heartbeated(Duration.ofSeconds(3));
		this.reconciler.checkContact();
		assertThat(this.reconciler.running()).isEmpty();
		awaitEvent(new DaemonStoppedEvent("d1", 1, "a", Reason.CONTACT_LOST, null));
	}

	@Test
	void watchdogStopsEveryDaemonOnceTheLastReadOfTheAssignmentsIsOlderThanTheDrainTimeoutPlusAPoll() {
		startD1OnThisNode();
		// Heartbeats go on; the last read that reached the node was sent long ago.
		this.reconciler.reconcile(this.store.read(Duration.ofSeconds(4)),
				System.nanoTime() - Duration.ofMinutes(10).toNanos());
		assertThat(this.reconciler.running()).containsKey("d1");
		this.reconciler.checkContact();
		assertThat(this.reconciler.running()).isEmpty();
		awaitEvent(new DaemonStoppedEvent("d1", 1, "a", Reason.CONTACT_LOST, null));
	}

	@Test
	void handOverDrainsTheNodeHandsEveryDaemonBackAndTheNextStartUndrains() {
		startD1OnThisNode();
		this.reconciler.handOver();
		assertThat(this.store.applied()).containsSubsequence("drain a", "release d1 a 1");
		assertThat(this.reconciler.running()).isEmpty();
		assertThat(this.events).contains(new DaemonStoppedEvent("d1", 1, "a", Reason.SHUTDOWN, null));
		this.reconciler.undrainAfterStop();
		this.reconciler.undrainAfterStop();
		assertThat(this.store.applied()).endsWith("release d1 a 1", "undrain a");
	}

	@Test
	void runningDaemonsStopAtOnceWhenTheSessionThatBindsTheNodeEndsAndAreHandedBackNextCycle() {
		startD1OnThisNode();
		this.node.loseSession();
		this.reconciler.checkContact();
		assertThat(this.reconciler.running()).isEmpty();
		awaitEvent(new DaemonStoppedEvent("d1", 1, "a", Reason.SESSION_LOST, null));
		reconcile();
		assertThat(this.store.applied()).endsWith("release d1 a 1");
	}

	@Test
	void assignmentReadBeforeTheNodesSessionEndedIsNeitherAcknowledgedNorStartedAfterIt() {
		this.store.assignment("d1", "a", AssignmentState.ASSIGNING, 1);
		reconcile();
		this.reconciler.handOver();
		this.reconciler = null;
		this.events.clear();
		this.store.assignment("d1", "a", AssignmentState.ASSIGNING, 2);
		long sentAt = System.nanoTime();
		DaemonSnapshot readBeforeTheLoss = this.store.read(Duration.ofSeconds(4));
		reconcilerOnly();
		// No daemon runs when the session ends, so the watchdog has nothing to stop.
		this.node.loseSession();
		this.reconciler.checkContact();
		this.reconciler.reconcile(readBeforeTheLoss, sentAt);
		assertThat(this.reconciler.running()).isEmpty();
		assertThat(this.store.assignment("d1")).get()
			.extracting(Assignment::state)
			.isEqualTo(AssignmentState.ASSIGNING);
	}

	@Test
	void daemonAcknowledgedWhileTheNodesSessionEndsIsNotStartedAndIsHandedBack() {
		this.store.assignment("d1", "a", AssignmentState.ASSIGNING, 1);
		this.store.beforeAcknowledgement(this.node::loseSession);
		reconcile();
		assertThat(this.reconciler.running()).isEmpty();
		assertThat(this.events).isEmpty();
		reconcile();
		assertThat(this.store.applied()).containsExactly("acknowledge d1 a 1", "release d1 a 1");
		assertThat(this.calls).as("calls of the agent").hasValue(0);
	}

	private void reconcilerOnly() {
		this.reconciler = new NodeReconciler(this.node, this.store, SETTINGS, Map.of("d1", this.agent),
				this.events::add, this.runsEnded::incrementAndGet, AgentRun.Backoff.DEFAULT);
	}

	private void reconcile() {
		if (this.reconciler == null) {
			this.reconciler = new NodeReconciler(this.node, this.store, SETTINGS, Map.of("d1", this.agent),
					this.events::add, this.runsEnded::incrementAndGet, AgentRun.Backoff.DEFAULT);
		}
		long sentAt = System.nanoTime();
		this.reconciler.reconcile(this.store.read(Duration.ofSeconds(4)), sentAt);
	}

	private void startD1OnThisNode() {
		this.store.assignment("d1", "a", AssignmentState.ASSIGNING, 1);
		reconcile();
		awaitStarted();
	}

	private void revokeD1() {
		this.store.assignment("d1", "a", AssignmentState.REVOKING, 1);
		reconcile();
	}

	// Either the caller or the agent's thread publishes the stop, whichever ends the run
	// first, so it may come just after the call returns.
	private void awaitEvent(Object event) {
		await().atMost(Duration.ofSeconds(5)).until(() -> this.events.contains(event));
	}

	private void awaitStarted() {
		await().atMost(Duration.ofSeconds(5))
			.until(() -> this.events.stream().anyMatch(DaemonStartedEvent.class::isInstance));
	}

}
