package dev.leader.docs.leadership;

import dev.leader.FencingToken;
import dev.leader.LeaderOnly;

import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

// tag::settlement[]
@Component
class BillingSettlement {

	// runs only on billing's current leader, fenced by its term
	@LeaderOnly(group = "billing", fenced = true)
	@Transactional // the fence check is the first statement of this transaction
	@Scheduled(fixedDelay = 5000) // every instance schedules it, only the leader runs it
	void settle() {
		long term = FencingToken.current().term(); // the term this call runs under
		// ... writes that commit only if this term still holds the lease
	}

}
// end::settlement[]
