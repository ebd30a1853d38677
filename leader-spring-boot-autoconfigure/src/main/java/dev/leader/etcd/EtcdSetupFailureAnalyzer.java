package dev.leader.etcd;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Turns a startup failure of the etcd settings ({@link EtcdSetupException}) into Spring
 * Boot's failure analysis: what the starter found, then what to change, without a stack
 * trace.
 */
class EtcdSetupFailureAnalyzer extends AbstractFailureAnalyzer<EtcdSetupException> {

	@Override
	protected FailureAnalysis analyze(Throwable rootFailure, EtcdSetupException cause) {
		return new FailureAnalysis(cause.description(), cause.action(), cause);
	}

}
