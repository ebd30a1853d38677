package dev.leader.node;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import org.apache.commons.logging.LogFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.dao.DataAccessResourceFailureException;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A round trip that keeps failing is a WARN with its reason at the first failure, then at
 * most one a minute, and an INFO when it succeeds again; never silence, never a line per
 * retry.
 */
@ExtendWith(OutputCaptureExtension.class)
class FailureWarningsTests {

	private static final long SECOND = TimeUnit.SECONDS.toNanos(1);

	private final FailureWarnings warnings = new FailureWarnings(LogFactory.getLog(FailureWarningsTests.class),
			"Leader node a heartbeat", Duration.ofMinutes(1));

	private final RuntimeException refused = new DataAccessResourceFailureException("Connection refused");

	@Test
	void firstFailureIsAWarningWithWhatItMeansAndTheReason(CapturedOutput output) {
		this.warnings.failed(0, this.refused, "this node takes no lease");
		assertThat(output).containsPattern("WARN .* Leader node a heartbeat failed; this node takes no lease: "
				+ "org.springframework.dao.DataAccessResourceFailureException: Connection refused");
	}

	@Test
	void failuresThatGoOnAreWarnedAboutOnceAMinuteWithTheirCount(CapturedOutput output) {
		for (long second = 0; second <= 150; second++) {
			this.warnings.failed(second * SECOND, this.refused, "this node takes no lease");
		}
		assertThat(warnings(output)).isEqualTo(3);
		assertThat(output).contains("Leader node a heartbeat failed 61 times in a row over 60 s; still failing: ")
			.contains("Leader node a heartbeat failed 121 times in a row over 120 s; still failing: ");
	}

	@Test
	void successAfterFailuresIsAnInfoAndTheNextFailureIsWarnedAtOnce(CapturedOutput output) {
		this.warnings.failed(0, this.refused, "this node takes no lease");
		this.warnings.failed(SECOND, this.refused, "this node takes no lease");
		this.warnings.succeeded(3 * SECOND);
		this.warnings.succeeded(4 * SECOND);
		this.warnings.failed(5 * SECOND, this.refused, "this node takes no lease");
		assertThat(output)
			.containsPattern("INFO .* Leader node a heartbeat succeeded again after 2 failed attempts " + "over 3 s");
		assertThat(Pattern.compile("succeeded again").matcher(output.getOut()).results().count()).isOne();
		assertThat(warnings(output)).isEqualTo(2);
	}

	@Test
	void failureThatAnotherLineWarnedAboutPostponesTheNextWarningByAMinute(CapturedOutput output) {
		this.warnings.failed(0, this.refused, null);
		this.warnings.failed(30 * SECOND, this.refused, null);
		this.warnings.failed(60 * SECOND, this.refused, "this node takes no lease");
		assertThat(warnings(output)).isZero();
		this.warnings.failed(90 * SECOND, this.refused, "this node takes no lease");
		assertThat(warnings(output)).isOne();
		assertThat(output).contains("failed 4 times in a row over 90 s");
	}

	private static long warnings(CapturedOutput output) {
		return Pattern.compile("WARN .* Leader node a heartbeat failed").matcher(output.getOut()).results().count();
	}

}
