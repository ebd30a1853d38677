package dev.leader.docs.readme;

import dev.leader.FencingToken;
import dev.leader.LeaderOnly;

import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

// tag::settlement[]
@Component
class Settlement {

	private final JdbcClient jdbc;

	Settlement(JdbcClient jdbc) {
		this.jdbc = jdbc;
	}

	@LeaderOnly(group = "billing", fenced = true) // only on billing's leader, fenced by
													// its term
	@Transactional // the fence is the first statement of this transaction
	@Scheduled(fixedDelay = 5000) // every instance schedules it; only the leader runs it
	void settle() {
		long term = FencingToken.current().term();
		this.jdbc.sql("UPDATE invoices SET settled_term = ? WHERE settled_term IS NULL").param(term).update(); // commits
																												// only
																												// if
																												// this
																												// term
																												// still
																												// holds
																												// billing's
																												// lease
	}

}
// end::settlement[]
