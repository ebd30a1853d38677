package dev.leader.docs.log;

import java.math.BigDecimal;
import java.time.Duration;

import dev.leader.log.Bookmark;
import dev.leader.log.DecisionLog;
import org.jspecify.annotations.Nullable;

import org.springframework.stereotype.Component;

@Component
class RateReads {

	private static final Duration TIMEOUT = Duration.ofSeconds(1);

	private final DecisionLog decisionLog;

	private final Rates rates;

	RateReads(DecisionLog decisionLog, Rates rates) {
		this.decisionLog = decisionLog;
		this.rates = rates;
	}

	// tag::reads[]
	// on any node
	@Nullable BigDecimal readYourWrite(String code, String bookmarkHeader) throws InterruptedException {
		// read-your-writes: the caller's own append
		return readWhen(this.decisionLog.awaitApplied(Bookmark.parse(bookmarkHeader), TIMEOUT), code);
	}

	@Nullable BigDecimal readCommitted(String code) throws InterruptedException {
		// everything committed before this call
		return readWhen(this.decisionLog.awaitReadIndex("billing", TIMEOUT), code);
	}

	@Nullable BigDecimal readRecent(String code) throws InterruptedException {
		// at most 500 ms behind
		return readWhen(this.decisionLog.awaitStaleness("billing", Duration.ofMillis(500), TIMEOUT), code);
	}

	private @Nullable BigDecimal readWhen(boolean caughtUp, String code) {
		if (!caughtUp) { // the wait timed out
			throw new IllegalStateException("Not caught up with billing's log; try again or ask the leader");
		}
		return this.rates.get(code);
	}
	// end::reads[]

}
