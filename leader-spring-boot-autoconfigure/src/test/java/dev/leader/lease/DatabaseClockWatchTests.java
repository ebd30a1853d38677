package dev.leader.lease;

import java.time.Duration;
import java.time.Instant;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The database clock check, on heartbeat times given by hand.
 */
class DatabaseClockWatchTests {

	private static final long SECOND = Duration.ofSeconds(1).toNanos();

	private final DatabaseClockWatch watch = new DatabaseClockWatch("a", Duration.ofMillis(200));

	private final Instant start = Instant.parse("2030-01-01T00:00:00Z");

	@Test
	void databaseClockThatAdvancesNoFurtherThanTheTimeFromTheEarlierSendToTheLaterReplyIsNoStep() {
		// 3 s passed locally from the first send to the second reply; the database may
		// have seen up to that plus the margin.
		twoHeartbeatsThreeSecondsApart(this.start.plusMillis(3200));
		assertThat(this.watch.steps()).isZero();
	}

	@Test
	void databaseClockThatAdvancesBeyondTheLocalTimeByMoreThanTheMarginIsAStep() {
		twoHeartbeatsThreeSecondsApart(this.start.plusMillis(3201));
		assertThat(this.watch.steps()).isOne();
		// The next comparison starts from the stepped time.
		this.watch.heartbeat(this.start.plusMillis(6201), 6 * SECOND - SECOND / 10, 6 * SECOND);
		assertThat(this.watch.steps()).isOne();
	}

	@Test
	void databaseClockThatStepsBackIsNotCountedAsAForwardStep() {
		twoHeartbeatsThreeSecondsApart(this.start.minusSeconds(60));
		assertThat(this.watch.steps()).isZero();
	}

	/**
	 * Heartbeats at the start, sent at 0 and answered at 0.1 s locally, then again, sent
	 * at 2.9 s and answered at 3 s.
	 * @param secondDatabaseTime the database's time in the second heartbeat
	 */
	private void twoHeartbeatsThreeSecondsApart(Instant secondDatabaseTime) {
		this.watch.heartbeat(this.start, 0, SECOND / 10);
		this.watch.heartbeat(secondDatabaseTime, 3 * SECOND - SECOND / 10, 3 * SECOND);
	}

}
