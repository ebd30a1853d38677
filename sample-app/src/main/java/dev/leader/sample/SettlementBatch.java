package dev.leader.sample;

import dev.leader.FencingToken;
import dev.leader.LeaderOnly;
import dev.leader.Leadership;

import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.context.annotation.Conditional;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

/**
 * A settlement batch that must run on one instance at a time: every instance schedules
 * it, and only the leader of the {@code billing} group runs it. Its writes are fenced, so
 * that a leader that was paused past its lease cannot commit a settlement: on the
 * database by {@code @LeaderOnly(fenced = true)}, whose transaction first locks the lease
 * row and checks the term ({@link Guarded}); on etcd, which keeps no lease row in the
 * database, by the fences table ({@link FencesTable}). Each run records the term it ran
 * under. Not scheduled with {@code sample.jobs.enabled=false}.
 */
abstract class SettlementBatch {

	private final JdbcClient jdbc;

	private final Leadership leadership;

	SettlementBatch(JdbcClient jdbc, Leadership leadership) {
		this.jdbc = jdbc;
		this.leadership = leadership;
	}

	/**
	 * Records a settlement in the caller's fenced transaction.
	 * @param token the term it runs under
	 */
	final void record(FencingToken token) {
		this.jdbc.sql("INSERT INTO settlement_batches (node_id, term) VALUES (?, ?)")
			.params(this.leadership.nodeId(), token.term())
			.update();
	}

	/**
	 * The batch of nodes that coordinate through the database: the lease's row fences it.
	 */
	@Component
	@ConditionalOnBooleanProperty(name = "sample.jobs.enabled", matchIfMissing = true)
	@Conditional(Coordination.OnDatabase.class)
	static class Guarded extends SettlementBatch {

		Guarded(JdbcClient jdbc, Leadership leadership) {
			super(jdbc, leadership);
		}

		@LeaderOnly(group = "billing", fenced = true)
		@Transactional
		@Scheduled(fixedDelayString = "${sample.settlement.interval:5s}")
		void settle() {
			record(FencingToken.current());
		}

	}

	/**
	 * The batch of nodes that coordinate through etcd: the fence of
	 * {@code settlement_batches} in the fences table fences it.
	 */
	@Component
	@ConditionalOnBooleanProperty(name = "sample.jobs.enabled", matchIfMissing = true)
	@Conditional(Coordination.OnEtcd.class)
	static class FencesTable extends SettlementBatch {

		private final WriteFences fences;

		FencesTable(JdbcClient jdbc, Leadership leadership, WriteFences fences) {
			super(jdbc, leadership);
			this.fences = fences;
		}

		@LeaderOnly(group = "billing")
		@Transactional
		@Scheduled(fixedDelayString = "${sample.settlement.interval:5s}")
		void settle() {
			FencingToken token = FencingToken.current();
			this.fences.fence("settlement_batches", token);
			record(token);
		}

	}

}
