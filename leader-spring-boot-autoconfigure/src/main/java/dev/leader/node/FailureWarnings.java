package dev.leader.node;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import org.apache.commons.logging.Log;
import org.jspecify.annotations.Nullable;

import org.springframework.core.NestedExceptionUtils;

/**
 * The warnings of a round trip that keeps failing, such as the heartbeat of a node whose
 * database refuses its statements, or a follower's read of a log: a WARN with the reason
 * at the first failure after a success (or since the start), then at most one every
 * {@link #REPEAT} while it keeps failing, each with the count and the time since the
 * first, and an INFO when it succeeds again. Failures in between are logged at DEBUG. Not
 * thread-safe: each round trip calls it from one thread at a time.
 */
public final class FailureWarnings {

	/**
	 * How often a round trip that keeps failing is warned about again.
	 */
	public static final Duration REPEAT = Duration.ofMinutes(1);

	private final Log logger;

	private final String what;

	private final long repeatNanos;

	private int failures;

	private long firstFailure;

	private long lastWarning;

	/**
	 * Creates the warnings of one kind of round trip.
	 * @param logger the logger to warn on
	 * @param what what fails, the start of each line ("Leader node a heartbeat")
	 * @param repeat how often a round trip that keeps failing is warned about again
	 */
	public FailureWarnings(Log logger, String what, Duration repeat) {
		this.logger = logger;
		this.what = what;
		this.repeatNanos = repeat.toNanos();
	}

	/**
	 * Logs a failure.
	 * @param now the reading of the monotonic clock
	 * @param ex what failed
	 * @param consequence what the failure means for the node, the end of the first
	 * warning's sentence, or {@code null} to log nothing above DEBUG this time, as when
	 * another line said so already: the next warning then comes a {@link #REPEAT} later
	 */
	public void failed(long now, RuntimeException ex, @Nullable String consequence) {
		this.failures++;
		if (this.failures == 1) {
			this.firstFailure = now;
			this.lastWarning = now;
			if (consequence != null) {
				this.logger.warn(this.what + " failed; " + consequence + ": " + reason(ex));
				return;
			}
		}
		else if (consequence == null) {
			this.lastWarning = now;
		}
		else if (now - this.lastWarning >= this.repeatNanos) {
			this.lastWarning = now;
			this.logger.warn(String.format("%s failed %d times in a row over %d s; still failing: %s", this.what,
					this.failures, TimeUnit.NANOSECONDS.toSeconds(now - this.firstFailure), reason(ex)));
			return;
		}
		if (this.logger.isDebugEnabled()) {
			this.logger.debug(this.what + " failed: " + ex);
		}
	}

	// Spring's exceptions name the statement; the driver's below them say what the
	// database answered.
	private static String reason(RuntimeException ex) {
		Throwable cause = NestedExceptionUtils.getMostSpecificCause(ex);
		return (cause != ex) ? ex + " (" + cause + ")" : ex.toString();
	}

	/**
	 * Logs a success, at INFO if it ends a run of failures.
	 * @param now the reading of the monotonic clock
	 */
	public void succeeded(long now) {
		if (this.failures > 0) {
			if (this.logger.isInfoEnabled()) {
				this.logger.info(String.format("%s succeeded again after %d failed attempts over %d s", this.what,
						this.failures, TimeUnit.NANOSECONDS.toSeconds(now - this.firstFailure)));
			}
			this.failures = 0;
		}
	}

}
