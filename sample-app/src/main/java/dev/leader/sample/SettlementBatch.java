package dev.leader.sample;

import dev.leader.FencingToken;
import dev.leader.LeaderOnly;
import dev.leader.Leadership;

import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

/**
 * A settlement batch that must run on one instance at a time: every instance schedules
 * it, and only the leader of the {@code billing} group runs it. Its writes are fenced:
 * the transaction first locks the lease row and checks the term, so a leader that was
 * paused past its lease cannot commit a settlement. Each run records the term it ran
 * under. Not scheduled with {@code sample.jobs.enabled=false}.
 */
@Component
@ConditionalOnBooleanProperty(name = "sample.jobs.enabled", matchIfMissing = true)
class SettlementBatch {

	private final JdbcClient jdbc;

	private final Leadership leadership;

	SettlementBatch(JdbcClient jdbc, Leadership leadership) {
		this.jdbc = jdbc;
		this.leadership = leadership;
	}

	@LeaderOnly(group = "billing", fenced = true)
	@Transactional
	@Scheduled(fixedDelayString = "${sample.settlement.interval:5s}")
	void settle() {
		FencingToken token = FencingToken.current();
		this.jdbc.sql("INSERT INTO settlement_batches (node_id, term) VALUES (?, ?)")
			.params(this.leadership.nodeId(), token.term())
			.update();
	}

}
