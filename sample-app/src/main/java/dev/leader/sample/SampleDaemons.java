package dev.leader.sample;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Locale;

import javax.sql.DataSource;

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
 * one statement per interval, in a transaction fenced by the assignment's generation, so
 * that a node that lost the daemon (paused, cut off, or too slow to drain) cannot write
 * again after another node took over; a rejected write is kept in {@link RejectedWrites}
 * and ends the run. With {@code sample.jobs.enabled=false} each daemon holds its
 * assignment and writes nothing.
 */
@Configuration(proxyBeanMethods = false)
class SampleDaemons {

	private final JdbcClient jdbc;

	private final TransactionTemplate transactions;

	private final Leadership leadership;

	private final RejectedWrites rejectedWrites;

	private final boolean writes;

	SampleDaemons(JdbcClient jdbc, TransactionTemplate transactions, Leadership leadership,
			RejectedWrites rejectedWrites, @Value("${sample.jobs.enabled:true}") boolean writes) {
		this.jdbc = jdbc;
		this.transactions = transactions;
		this.leadership = leadership;
		this.rejectedWrites = rejectedWrites;
		this.writes = writes;
	}

	/**
	 * Dispatches the outbox: marks pending messages as dispatched, in small batches.
	 * @param interval the time between two batches
	 * @param dataSource the database, whose dialect the statement follows
	 * @return the daemon
	 */
	@Bean("outbox-dispatcher")
	DaemonAgent outboxDispatcher(@Value("${sample.outbox.interval:1s}") Duration interval, DataSource dataSource) {
		// MariaDB updates a table in the order and up to the limit it is given, but
		// neither reads it in a subquery of the same UPDATE nor has clock_timestamp().
		String statement = isMariaDb(dataSource) ? """
				UPDATE outbox SET dispatched_at = UTC_TIMESTAMP(6), dispatched_by = ?, generation = ?
				WHERE dispatched_at IS NULL ORDER BY id LIMIT 100
				""" : """
				UPDATE outbox SET dispatched_at = clock_timestamp(), dispatched_by = ?, generation = ?
				WHERE id IN (SELECT id FROM outbox WHERE dispatched_at IS NULL ORDER BY id LIMIT 100
				             FOR UPDATE SKIP LOCKED)
				""";
		return fencedBatches("outbox-dispatcher", interval, statement);
	}

	private static boolean isMariaDb(DataSource dataSource) {
		try (Connection connection = dataSource.getConnection()) {
			return connection.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT).contains("mariadb");
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not tell the sample's database: " + ex.getMessage(), ex);
		}
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
					context.guard();
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
