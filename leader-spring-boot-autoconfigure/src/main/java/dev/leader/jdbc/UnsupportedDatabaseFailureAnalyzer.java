package dev.leader.jdbc;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Turns a startup failure caused by a database, or a driver, that the starter cannot
 * coordinate on ({@link UnsupportedDatabaseException}) into Spring Boot's failure
 * analysis: what the starter found and why it refuses it, then what to change.
 */
class UnsupportedDatabaseFailureAnalyzer extends AbstractFailureAnalyzer<UnsupportedDatabaseException> {

	@Override
	protected FailureAnalysis analyze(Throwable rootFailure, UnsupportedDatabaseException cause) {
		return new FailureAnalysis(cause.getMessage(), cause.action(), cause);
	}

}
