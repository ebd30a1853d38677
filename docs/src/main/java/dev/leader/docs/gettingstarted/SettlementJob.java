package dev.leader.docs.gettingstarted;

import dev.leader.FencingToken;
import dev.leader.LeaderOnly;

import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

// tag::settlement[]
@Component
class SettlementJob {

	private final JdbcClient jdbc;

	SettlementJob(JdbcClient jdbc) {
		this.jdbc = jdbc;
	}

	// only billing's leader, and only while its term holds
	@LeaderOnly(group = "billing", fenced = true)
	@Transactional // the fence check is the first statement of this transaction
	@Scheduled(fixedDelay = 5_000)
	void settle() {
		long term = FencingToken.current().term();
		this.jdbc.sql("UPDATE invoices SET settled = true, settled_term = :term WHERE settled = false")
			.param("term", term)
			.update(); // commits only if billing's lease still has this term
	}

}
// end::settlement[]
