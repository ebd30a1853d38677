package dev.leader.docs.daemons;

import java.time.Duration;

import dev.leader.DaemonAgent;
import dev.leader.DaemonContext;

import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Component;
import org.springframework.transaction.support.TransactionTemplate;

// tag::daemon[]
@Component("outbox-dispatcher")
class OutboxDispatcher implements DaemonAgent {

	private final TransactionTemplate transactions;

	private final JdbcClient jdbc;

	OutboxDispatcher(TransactionTemplate transactions, JdbcClient jdbc) {
		this.transactions = transactions;
		this.jdbc = jdbc;
	}

	@Override
	public void run(DaemonContext context) throws InterruptedException {
		while (!context.isCancelled()) {
			this.transactions.executeWithoutResult((status) -> {
				context.guard(); // locks the assignment: a stale generation is rejected
				this.jdbc.sql("UPDATE outbox SET sent = true WHERE sent = false").update();
			});
			context.awaitCancellation(Duration.ofSeconds(1));
		}
	}

}
// end::daemon[]
