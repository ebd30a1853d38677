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

	// only on billing's leader; every instance schedules it, and the fence is the first
	// statement of the transaction: it commits only if this term still holds the lease
	@LeaderOnly(group = "billing", fenced = true)
	@Transactional
	@Scheduled(fixedDelay = 5000)
	void settle() {
		long term = FencingToken.current().term();
		this.jdbc.sql("UPDATE invoices SET settled_term = ? WHERE settled_term IS NULL").param(term).update();
	}

}
// end::settlement[]
