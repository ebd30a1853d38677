package dev.leader.test;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;

import javax.sql.DataSource;

import dev.leader.DaemonContext;
import dev.leader.StaleLeadershipException;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The fenced writes of the daemon agents of {@link DaemonTestNode} and {@link TestNode}:
 * a row {@code (daemon, generation, node, incarnation, 'W', stamp_nanos)} in
 * {@link DaemonTestNode#WRITES_TABLE} inserted in a transaction guarded by the agent's
 * context, once right after it starts and then every interval, and a row of kind
 * {@code 'R'} outside any transaction for each write the guard rejected. A polite agent
 * returns at its first rejection; a stubborn one ignores cancellation and interrupts and
 * goes on writing until the process ends or a minute has passed.
 */
final class DaemonWrites {

	private static final Duration STUBBORN_LIMIT = Duration.ofMinutes(1);

	private final JdbcTemplate jdbc;

	private final TransactionTemplate transactions;

	private final String nodeId;

	private final long incarnation;

	private final Duration interval;

	DaemonWrites(DataSource dataSource, String nodeId, long incarnation, Duration interval) {
		this.jdbc = new JdbcTemplate(dataSource);
		this.transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
		this.nodeId = nodeId;
		this.incarnation = incarnation;
		this.interval = interval;
	}

	void runPolitely(DaemonContext context) throws InterruptedException {
		while (!context.isCancelled()) {
			if (!write(context)) {
				return;
			}
			context.awaitCancellation(this.interval);
		}
	}

	void runStubbornly(DaemonContext context) {
		long deadline = System.nanoTime() + STUBBORN_LIMIT.toNanos();
		while (System.nanoTime() - deadline < 0) {
			Thread.interrupted();
			try {
				write(context);
			}
			catch (RuntimeException ex) {
				System.err.println("Stubborn write failed: " + ex);
			}
			pauseIgnoringInterrupts(this.interval);
		}
	}

	private boolean write(DaemonContext context) {
		try {
			this.transactions.executeWithoutResult((status) -> {
				context.guard();
				insert(context, 'W');
			});
			return true;
		}
		catch (StaleLeadershipException ex) {
			insert(context, 'R');
			return false;
		}
	}

	private void insert(DaemonContext context, char kind) {
		this.jdbc.update(
				"INSERT INTO " + DaemonTestNode.WRITES_TABLE
						+ " (daemon, generation, node, incarnation, kind, stamp_nanos) VALUES (?, ?, ?, ?, ?, ?)",
				context.name(), context.generation(), this.nodeId, this.incarnation, String.valueOf(kind),
				System.nanoTime());
	}

	private static void pauseIgnoringInterrupts(Duration pause) {
		long until = System.nanoTime() + pause.toNanos();
		for (long left = pause.toNanos(); left > 0; left = until - System.nanoTime()) {
			Thread.interrupted();
			LockSupport.parkNanos(left);
		}
	}

}
