package dev.leader.lease;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import dev.leader.FencingToken;
import dev.leader.LeaderChangedEvent;
import dev.leader.LeadershipGrantedEvent;
import dev.leader.LeadershipRevokedEvent;
import dev.leader.RevokeReason;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The per-group lease state machine on a fake monotonic clock: no thread, no store, no
 * waiting.
 */
class GroupLeaseTests {

	private static final Duration DURATION = Duration.ofMillis(2000);

	private static final Duration MARGIN = Duration.ofMillis(100);

	private static final Duration SAFE_WINDOW = DURATION.minus(MARGIN);

	private final FakeClock clock = new FakeClock();

	private final GroupLease lease = new GroupLease("orders", "a", SAFE_WINDOW, this.clock, (group) -> {
	}, (group) -> {
	});

	private final List<Duration> leaderless = new ArrayList<>();

	private final LeaseMonitor monitor = (group, duration) -> this.leaderless.add(duration);

	@Test
	void grantIsTrustedForTheSafeWindowFromTheMomentTheAcquireWasSent() {
		long sent = this.clock.nanoTime();
		this.clock.advance(Duration.ofMillis(300));
		LeadershipGrantedEvent granted = this.lease.grant(7, sent, DURATION, MARGIN);
		assertThat(granted).isEqualTo(new LeadershipGrantedEvent("orders", 7, "a"));
		assertThat(this.lease.isLeader()).isTrue();
		assertThat(this.lease.token()).contains(new FencingToken("orders", 7));
		assertThat(this.lease.safeWindowRemaining()).contains(Duration.ofMillis(1600));
		this.clock.advance(Duration.ofMillis(1599));
		assertThat(this.lease.isLeader()).isTrue();
		this.clock.advance(Duration.ofMillis(1));
		assertThat(this.lease.isLeader()).isFalse();
		assertThat(this.lease.token()).isEmpty();
		assertThat(this.lease.safeWindowRemaining()).isEmpty();
	}

	/**
	 * A store that answers a grant with less time left than a duration, as one that
	 * counts a lease handed over from an earlier keep-alive does, shortens the window.
	 */
	@Test
	void grantWithLessTimeLeftIsTrustedForThatTimeLessTheMargin() {
		long sent = this.clock.nanoTime();
		this.clock.advance(Duration.ofMillis(300));
		this.lease.grant(7, sent, Duration.ofMillis(1200), MARGIN);
		assertThat(this.lease.safeWindowRemaining()).contains(Duration.ofMillis(800));
		this.clock.advance(Duration.ofMillis(800));
		assertThat(this.lease.isLeader()).isFalse();
	}

	@Test
	void closedWindowStepsDownAsExpiredExactlyOnce() {
		this.lease.grant(3, this.clock.nanoTime(), DURATION, MARGIN);
		this.clock.advance(Duration.ofMillis(1000));
		assertThat(this.lease.closedWindowReason()).as("window still open").isNull();
		this.clock.advance(Duration.ofMillis(900));
		assertThat(this.lease.closedWindowReason()).isEqualTo(RevokeReason.EXPIRED);
		assertThat(this.lease.heldTerm()).as("held until it steps down").isEqualTo(3);
		assertThat(this.lease.stepDown(RevokeReason.EXPIRED))
			.isEqualTo(new LeadershipRevokedEvent("orders", 3, "a", RevokeReason.EXPIRED));
		assertThat(this.lease.stepDown(RevokeReason.SHUTDOWN)).as("a second revoke of the same term").isNull();
		assertThat(this.lease.closedWindowReason()).isNull();
		assertThat(this.lease.heldTerm()).isEqualTo(-1);
	}

	@Test
	void windowThatClosesAfterAFailedRenewalStepsDownAsError() {
		this.lease.grant(3, this.clock.nanoTime(), DURATION, MARGIN);
		this.lease.renewFailed();
		this.clock.advance(SAFE_WINDOW);
		assertThat(this.lease.closedWindowReason()).isEqualTo(RevokeReason.ERROR);
	}

	@Test
	void renewalExtendsTheSafeWindowFromItsSendAndClearsAnEarlierFailure() {
		this.lease.grant(3, this.clock.nanoTime(), DURATION, MARGIN);
		this.lease.renewFailed();
		this.clock.advance(Duration.ofMillis(1500));
		long sent = this.clock.nanoTime();
		this.clock.advance(Duration.ofMillis(200));
		assertThat(this.lease.holds(3)).isTrue();
		this.lease.renew(sent);
		assertThat(this.lease.safeWindowRemaining()).contains(Duration.ofMillis(1700));
		this.clock.advance(Duration.ofMillis(1000));
		assertThat(this.lease.isLeader()).as("past the first window, inside the renewed one").isTrue();
		this.clock.advance(Duration.ofMillis(700));
		assertThat(this.lease.closedWindowReason()).isEqualTo(RevokeReason.EXPIRED);
	}

	@Test
	void renewalOfAnotherTermIsNotTheTermHeld() {
		this.lease.grant(3, this.clock.nanoTime(), DURATION, MARGIN);
		assertThat(this.lease.holds(2)).isFalse();
		assertThat(this.lease.holds(4)).isFalse();
		this.lease.stepDown(RevokeReason.LOST);
		assertThat(this.lease.holds(3)).as("a term already revoked").isFalse();
	}

	@Test
	void leaseMissingFromARenewalWasReleasedExpiredOrLostDependingOnTheLeaseBefore() {
		Instant now = Instant.now();
		assertThat(this.lease.lossReason(3, null)).isEqualTo(RevokeReason.RELEASED);
		assertThat(this.lease.lossReason(3, new LeaseState("orders", null, 3, now, Duration.ZERO)))
			.isEqualTo(RevokeReason.RELEASED);
		assertThat(this.lease.lossReason(3, new LeaseState("orders", "a", 3, now, Duration.ofMillis(-5))))
			.isEqualTo(RevokeReason.EXPIRED);
		assertThat(this.lease.lossReason(3, new LeaseState("orders", "a", 4, now, Duration.ofSeconds(2))))
			.as("our id under a later term: another process with the same id")
			.isEqualTo(RevokeReason.LOST);
		assertThat(this.lease.lossReason(3, new LeaseState("orders", "b", 4, now, Duration.ofSeconds(2))))
			.isEqualTo(RevokeReason.LOST);
	}

	@Test
	void yieldCooldownKeepsTheNodeOutUntilItIsOver() {
		assertThat(this.lease.cooling()).as("no cooldown at first").isNotPositive();
		this.lease.coolDown(Duration.ofSeconds(3));
		assertThat(this.lease.cooling()).isEqualTo(Duration.ofSeconds(3).toNanos());
		this.clock.advance(Duration.ofMillis(2999));
		assertThat(this.lease.cooling()).isPositive();
		this.clock.advance(Duration.ofMillis(1));
		assertThat(this.lease.cooling()).isNotPositive();
	}

	@Test
	void followerAcquiresAtOnceOnlyWhenTheLeaseItReadIsFreeExpiredOrStillUnderItsOwnId() {
		assertThat(this.lease.acquirableNow()).as("nothing read yet").isTrue();
		this.lease.observe(held("b", 1, Duration.ofSeconds(2)), this.clock.nanoTime(), this.monitor);
		assertThat(this.lease.acquirableNow()).as("held by another node").isFalse();
		this.lease.observe(held("b", 1, Duration.ofMillis(-1)), this.clock.nanoTime(), this.monitor);
		assertThat(this.lease.acquirableNow()).as("expired").isTrue();
		this.lease.observe(held("a", 2, Duration.ofSeconds(2)), this.clock.nanoTime(), this.monitor);
		assertThat(this.lease.acquirableNow()).as("still valid under this node's id, stepped down from locally")
			.isTrue();
	}

	@Test
	void leaderChangeIsReportedOnANewHolderOrTermButNotOnARenewal() {
		Instant expiry = Instant.parse("2030-01-01T00:00:00Z");
		assertThat(this.lease.observe(null, this.clock.nanoTime(), this.monitor)).isNull();
		assertThat(this.lease.observe(new LeaseState("orders", "b", 1, expiry, Duration.ofSeconds(2)),
				this.clock.nanoTime(), this.monitor))
			.isEqualTo(new LeaderChangedEvent("orders", "b", 1, expiry));
		assertThat(this.lease.observe(held("b", 1, Duration.ofSeconds(2)), this.clock.nanoTime(), this.monitor))
			.as("renewed")
			.isNull();
		assertThat(this.lease.observe(held("b", 2, Duration.ofSeconds(2)), this.clock.nanoTime(), this.monitor))
			.as("same holder, new term")
			.extracting(LeaderChangedEvent::term)
			.isEqualTo(2L);
		assertThat(this.lease.observe(new LeaseState("orders", null, 2, expiry, Duration.ZERO), this.clock.nanoTime(),
				this.monitor))
			.as("released")
			.isEqualTo(new LeaderChangedEvent("orders", null, 2, null));
	}

	@Test
	void leaderlessTimeRunsFromTheEndOfTheLeaseLastReadToTheNewTerm() {
		this.lease.observe(held("b", 1, Duration.ofSeconds(2)), this.clock.nanoTime(), this.monitor);
		this.clock.advance(Duration.ofMillis(2350));
		this.lease.observe(held("c", 2, Duration.ofSeconds(2)), this.clock.nanoTime(), this.monitor);
		this.lease.observe(held("c", 2, Duration.ofSeconds(2)), this.clock.nanoTime(), this.monitor);
		this.clock.advance(Duration.ofMillis(500));
		this.lease.observe(held("d", 3, Duration.ofSeconds(2)), this.clock.nanoTime(), this.monitor);
		assertThat(this.leaderless).as("late by 350 ms, then replaced before its end")
			.containsExactly(Duration.ofMillis(350), Duration.ZERO);
	}

	private static LeaseState held(String holder, long term, Duration remaining) {
		return new LeaseState("orders", holder, term, Instant.EPOCH.plus(remaining), remaining);
	}

	/**
	 * A monotonic clock that moves only when told to.
	 */
	static final class FakeClock implements MonotonicClock {

		private long now = 1_000_000_000L;

		@Override
		public synchronized long nanoTime() {
			return this.now;
		}

		synchronized void advance(Duration duration) {
			this.now += duration.toNanos();
		}

	}

}
