package dev.leader.docs.testing;

import java.util.Optional;

import dev.leader.FencingToken;
import dev.leader.LeaderOnly;

import org.springframework.stereotype.Component;

/**
 * A leader-only call of the application under test.
 */
@Component
class InvoiceRun {

	@LeaderOnly(group = "billing")
	Optional<Long> run() {
		// ... the invoices of this run
		return Optional.of(FencingToken.current().term());
	}

}
