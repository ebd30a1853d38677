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
 * A daemon that builds a report of the dispatched messages on one node of the cluster at
 * a time. Each report records the node and the generation it was built under, and is
 * fenced by that generation. With {@code sample.jobs.enabled=false} it holds its
 * assignment and writes nothing.
 */
@Component("report-builder")
class ReportBuilder implements DaemonAgent {

	private final JdbcClient jdbc;

	private final TransactionTemplate transactions;

	private final Leadership leadership;

	private final RejectedWrites rejectedWrites;

	private final Duration interval;

	private final boolean writes;

	ReportBuilder(JdbcClient jdbc, TransactionTemplate transactions, Leadership leadership,
			RejectedWrites rejectedWrites, @Value("${sample.reports.interval:5s}") Duration interval,
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
							INSERT INTO reports (node_id, generation, dispatched)
							SELECT ?, ?, count(*) FROM outbox WHERE dispatched_at IS NOT NULL
							""").params(this.leadership.nodeId(), context.generation()).update();
				});
			}
			catch (StaleLeadershipException ex) {
				this.rejectedWrites.record("report-builder", ex);
				throw ex;
			}
			context.awaitCancellation(this.interval);
		}
	}

}
