package dev.leader.sample;

import java.time.Duration;

import dev.leader.DaemonAgent;
import dev.leader.DaemonContext;
import dev.leader.Leadership;
import dev.leader.StaleLeadershipException;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The sample's daemons, each run by one node of the cluster at a time. Every daemon runs
 * one statement per interval, in a transaction fenced by the assignment's generation
 * ({@link WriteFences}), so that a node that lost the daemon (paused, cut off, or too
 * slow to drain) cannot write again after another node took over; a rejected write is
 * kept in {@link RejectedWrites} and ends the run. With {@code sample.jobs.enabled=false}
 * each daemon holds its assignment and writes nothing.
 */
@Configuration(proxyBeanMethods = false)
class SampleDaemons {

	private final JdbcClient jdbc;

	private final TransactionTemplate transactions;

	private final WriteFences fences;

	private final Leadership leadership;

	private final RejectedWrites rejectedWrites;

	private final boolean writes;

	SampleDaemons(JdbcClient jdbc, TransactionTemplate transactions, WriteFences fences, Leadership leadership,
			RejectedWrites rejectedWrites, @Value("${sample.jobs.enabled:true}") boolean writes) {
		this.jdbc = jdbc;
		this.transactions = transactions;
		this.fences = fences;
		this.leadership = leadership;
		this.rejectedWrites = rejectedWrites;
		this.writes = writes;
	}

	/**
	 * Dispatches the outbox: marks pending messages as dispatched, in small batches.
	 * @param interval the time between two batches
	 * @return the daemon
	 */
	@Bean("outbox-dispatcher")
	DaemonAgent outboxDispatcher(@Value("${sample.outbox.interval:1s}") Duration interval) {
		return fencedBatches("outbox-dispatcher", interval, """
				UPDATE outbox SET dispatched_at = CURRENT_TIMESTAMP(6), dispatched_by = ?, generation = ?
				WHERE id IN (SELECT id FROM (SELECT id FROM outbox WHERE dispatched_at IS NULL ORDER BY id LIMIT 100)
				             AS pending)
				""");
	}

	/**
	 * Builds a report of the dispatched messages, which records the node and the
	 * generation it was built under.
	 * @param interval the time between two reports
	 * @return the daemon
	 */
	@Bean("report-builder")
	DaemonAgent reportBuilder(@Value("${sample.reports.interval:5s}") Duration interval) {
		return fencedBatches("report-builder", interval, """
				INSERT INTO reports (node_id, generation, dispatched)
				SELECT ?, ?, count(*) FROM outbox WHERE dispatched_at IS NOT NULL
				""");
	}

	// The statement takes this node's id and the generation as its parameters.
	private DaemonAgent fencedBatches(String daemon, Duration interval, String statement) {
		return (context) -> {
			if (this.writes) {
				runBatches(daemon, interval, statement, context);
			}
			else {
				// Paused: holds its assignment and writes nothing, until it is cancelled.
				while (!context.awaitCancellation(Duration.ofHours(1))) {
					// still assigned
				}
			}
		};
	}

	private void runBatches(String daemon, Duration interval, String statement, DaemonContext context)
			throws InterruptedException {
		while (!context.isCancelled()) {
			try {
				this.transactions.executeWithoutResult((status) -> {
					this.fences.fence(context);
					this.jdbc.sql(statement).params(this.leadership.nodeId(), context.generation()).update();
				});
			}
			catch (StaleLeadershipException ex) {
				this.rejectedWrites.record(daemon, ex);
				throw ex;
			}
			context.awaitCancellation(interval);
		}
	}

}
