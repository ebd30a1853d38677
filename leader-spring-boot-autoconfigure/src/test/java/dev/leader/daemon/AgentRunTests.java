package dev.leader.daemon;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import dev.leader.DaemonAgent;
import dev.leader.DaemonStartedEvent;
import dev.leader.DaemonStoppedEvent;
import dev.leader.DaemonStoppedEvent.Reason;
import dev.leader.StaleLeadershipException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * Tests for {@link AgentRun}: the agent's thread, its back-off, its cancellation and its
 * guard. No database.
 */
class AgentRunTests {

	private static final AgentRun.Backoff FAST = new AgentRun.Backoff(Duration.ofMillis(100), Duration.ofMillis(400));

	private final InMemoryDaemonStore store = new InMemoryDaemonStore();

	private final List<Object> events = new CopyOnWriteArrayList<>();

	private final AtomicInteger ended = new AtomicInteger();

	private AgentRun run;

	@AfterEach
	void cancelRun() throws InterruptedException {
		if (this.run != null) {
			this.run.cancel(Reason.SHUTDOWN);
			this.run.interrupt();
			this.run.join(5000);
		}
	}

	@Test
	void agentThatKeepsThrowingIsCalledAgainAfterABackOffThatDoublesUpToItsMaximum() {
		List<Long> calls = new CopyOnWriteArrayList<>();
		start((context) -> {
			calls.add(System.nanoTime());
			throw new IllegalStateException("boom");
		});
		await().atMost(Duration.ofSeconds(10)).until(() -> calls.size() >= 5);
		long[] expected = { 100, 200, 400, 400 };
		for (int i = 0; i < expected.length; i++) {
			assertThat(Duration.ofNanos(calls.get(i + 1) - calls.get(i))).as("wait before call %d", i + 2)
				.isGreaterThanOrEqualTo(Duration.ofMillis(expected[i]));
		}
		assertThat(List.copyOf(this.events).subList(0, 4)).satisfiesExactly(
				(event) -> assertThat(event).isEqualTo(new DaemonStartedEvent("d1", 3, "a")),
				(event) -> assertThat(event).isInstanceOfSatisfying(DaemonStoppedEvent.class, (stopped) -> {
					assertThat(stopped.reason()).isEqualTo(Reason.FAILED);
					assertThat(stopped.failure()).hasMessage("boom");
				}), (event) -> assertThat(event).isEqualTo(new DaemonStartedEvent("d1", 3, "a")),
				(event) -> assertThat(event).isInstanceOf(DaemonStoppedEvent.class));
	}

	@Test
	void backOffDoublesOnlyWhileTheAgentFailsSoonerThanItWaited() {
		Duration second = Duration.ofSeconds(1);
		AgentRun.Backoff backoff = AgentRun.Backoff.DEFAULT;
		assertThat(backoff.next(Duration.ZERO, Duration.ZERO, true)).isEqualTo(second);
		assertThat(backoff.next(second, Duration.ofMillis(10), true)).isEqualTo(Duration.ofSeconds(2));
		assertThat(backoff.next(Duration.ofSeconds(16), Duration.ofMillis(10), true)).isEqualTo(Duration.ofSeconds(30));
		assertThat(backoff.next(Duration.ofSeconds(30), Duration.ofMillis(10), true)).isEqualTo(Duration.ofSeconds(30));
		assertThat(backoff.next(Duration.ofSeconds(8), Duration.ofSeconds(8), true)).as("outlasted its back-off")
			.isEqualTo(second);
		assertThat(backoff.next(Duration.ofSeconds(8), Duration.ofMillis(10), false)).as("returned").isEqualTo(second);
	}

	@Test
	void cancelledRunEndsItsAgentOnceAndReportsTheReason() {
		start((context) -> context.awaitCancellation(Duration.ofMinutes(1)));
		await().atMost(Duration.ofSeconds(5)).until(() -> !this.events.isEmpty());
		this.run.cancel(Reason.REVOKED);
		this.run.cancel(Reason.TAKEN_OVER);
		await().atMost(Duration.ofSeconds(5)).until(() -> !this.run.isAlive());
		this.run.end(Reason.DRAIN_TIMEOUT);
		assertThat(this.events).containsExactly(new DaemonStartedEvent("d1", 3, "a"),
				new DaemonStoppedEvent("d1", 3, "a", Reason.REVOKED, null));
		assertThat(this.ended).as("calls of the ended callback").hasValue(1);
	}

	@Test
	void runCancelledDuringItsBackOffDoesNotCallTheAgentAgain() {
		AtomicInteger calls = new AtomicInteger();
		start((context) -> {
			calls.incrementAndGet();
			throw new IllegalStateException("boom");
		}, new AgentRun.Backoff(Duration.ofMinutes(1), Duration.ofMinutes(1)));
		await().atMost(Duration.ofSeconds(5)).until(() -> this.events.size() == 2);
		this.run.cancel(Reason.REVOKED);
		await().atMost(Duration.ofSeconds(5)).until(() -> !this.run.isAlive());
		assertThat(calls).hasValue(1);
		this.run.end(Reason.REVOKED);
		assertThat(this.events).as("the failure already reported the stop").hasSize(2);
	}

	@Test
	void guardRejectsWritesOnceTheAssignmentHasAnotherGenerationOrNode() {
		this.store.assignment("d1", "a", AssignmentState.ACTIVE, 3);
		this.run = new AgentRun("d1", 3, (context) -> {
		}, "a", this.store, this.events::add, this.ended::incrementAndGet, FAST);
		this.run.guard();
		this.store.assignment("d1", "a", AssignmentState.REVOKING, 3);
		this.run.guard();
		this.store.assignment("d1", "a", AssignmentState.DELETED, 3);
		assertThatExceptionOfType(StaleLeadershipException.class).isThrownBy(this.run::guard)
			.withMessageContaining("the assignment was deleted");
		this.store.assignment("d1", "b", AssignmentState.ASSIGNING, 4);
		assertThatExceptionOfType(StaleLeadershipException.class).isThrownBy(this.run::guard)
			.withMessageContaining("generation 4 on node b");
		this.run = null;
	}

	private void start(DaemonAgent agent) {
		start(agent, FAST);
	}

	private void start(DaemonAgent agent, AgentRun.Backoff backoff) {
		this.run = new AgentRun("d1", 3, agent, "a", this.store, this.events::add, this.ended::incrementAndGet,
				backoff);
		this.run.start();
	}

}
