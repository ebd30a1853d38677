package dev.leader.sample;

import java.time.Duration;

import dev.leader.DaemonAgent;
import dev.leader.DaemonContext;
import dev.leader.Leadership;
import dev.leader.StaleLeadershipException;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Component;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * A daemon that dispatches the outbox: one node of the cluster at a time marks pending
 * messages as dispatched, in small batches. Each batch is fenced by the assignment's
 * generation, so a node that lost the daemon (paused, cut off, or too slow to drain)
 * cannot dispatch a message again after another node took over. With
 * {@code sample.jobs.enabled=false} it holds its assignment and writes nothing.
 */
@Component("outbox-dispatcher")
class OutboxDispatcher implements DaemonAgent {

	private final JdbcClient jdbc;

	private final TransactionTemplate transactions;

	private final Leadership leadership;

	private final RejectedWrites rejectedWrites;

	private final Duration interval;

	private final boolean writes;

	OutboxDispatcher(JdbcClient jdbc, TransactionTemplate transactions, Leadership leadership,
			RejectedWrites rejectedWrites, @Value("${sample.outbox.interval:1s}") Duration interval,
			@Value("${sample.jobs.enabled:true}") boolean writes) {
		this.jdbc = jdbc;
		this.transactions = transactions;
		this.leadership = leadership;
		this.rejectedWrites = rejectedWrites;
		this.interval = interval;
		this.writes = writes;
	}

	@Override
	public void run(DaemonContext context) throws InterruptedException {
		if (!this.writes) {
			// Paused: holds its assignment and writes nothing, until it is cancelled.
			while (!context.awaitCancellation(Duration.ofHours(1))) {
				// still assigned
			}
			return;
		}
		while (!context.isCancelled()) {
			try {
				this.transactions.executeWithoutResult((status) -> {
					context.guard();
					this.jdbc.sql("""
							UPDATE outbox SET dispatched_at = clock_timestamp(), dispatched_by = ?, generation = ?
							WHERE id IN (SELECT id FROM outbox WHERE dispatched_at IS NULL ORDER BY id LIMIT 100
							             FOR UPDATE SKIP LOCKED)
							""").params(this.leadership.nodeId(), context.generation()).update();
				});
			}
			catch (StaleLeadershipException ex) {
				this.rejectedWrites.record("outbox-dispatcher", ex);
				throw ex;
			}
			context.awaitCancellation(this.interval);
		}
	}

}
