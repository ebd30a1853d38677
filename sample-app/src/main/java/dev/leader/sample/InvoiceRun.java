package dev.leader.sample;

import dev.leader.FencingToken;
import dev.leader.Leadership;
import dev.leader.StaleLeadershipException;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * A long invoicing run of the leader of {@code billing}: it takes the group's fencing
 * token when it begins and then writes one invoice per step, {@value #STEPS} steps in
 * all, under that token, without asking again whether this node still leads. It trusts
 * the fence instead ({@link WriteFences}), as a batch must whose node can be paused at
 * any instant (a long GC, a SIGSTOP): when another node took over meanwhile, the database
 * rejects the next write, the run ends, and {@link RejectedWrites} keeps the rejection.
 * Steps run on the application's scheduler, one at a time. Not scheduled with
 * {@code sample.jobs.enabled=false}.
 */
@Component
@ConditionalOnBooleanProperty(name = "sample.jobs.enabled", matchIfMissing = true)
class InvoiceRun {

	static final String GROUP = "billing";

	static final int STEPS = 10;

	private final Leadership leadership;

	private final WriteFences fences;

	private final TransactionTemplate transactions;

	private final JdbcClient jdbc;

	private final RejectedWrites rejectedWrites;

	private @Nullable FencingToken token;

	private int step;

	InvoiceRun(Leadership leadership, WriteFences fences, TransactionTemplate transactions, JdbcClient jdbc,
			RejectedWrites rejectedWrites) {
		this.leadership = leadership;
		this.fences = fences;
		this.transactions = transactions;
		this.jdbc = jdbc;
		this.rejectedWrites = rejectedWrites;
	}

	@Scheduled(fixedDelayString = "${sample.invoices.step:500ms}")
	void step() {
		if (this.token == null) {
			begin();
			if (this.token == null) {
				return;
			}
		}
		FencingToken writing = this.token;
		int next = this.step + 1;
		try {
			this.transactions.executeWithoutResult((status) -> {
				this.fences.fence("invoices", writing);
				this.jdbc.sql("INSERT INTO invoices (node_id, term, step) VALUES (?, ?, ?)")
					.params(this.leadership.nodeId(), writing.term(), next)
					.update();
			});
		}
		catch (StaleLeadershipException ex) {
			this.rejectedWrites.record("invoice-run", ex);
			begin();
			return;
		}
		this.step = next;
		if (next == STEPS) {
			// The next run begins at once, so that a leader always has a run under way,
			// as a busy one would.
			begin();
		}
	}

	private void begin() {
		this.token = this.leadership.token(GROUP).orElse(null);
		this.step = 0;
	}

}
