package dev.leader.docs.testing;

import dev.leader.test.TestLeadership;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.ApplicationContext;

import static org.assertj.core.api.Assertions.assertThat;

// tag::alone[]
@SpringBootTest(properties = "spring.datasource.url=jdbc:h2:mem:invoicing")
class InvoiceRunAloneIT {

	@Autowired
	ApplicationContext context;

	@Autowired
	InvoiceRun invoiceRun;

	@Test
	void runsOnTheLeader() {
		// alone, the node leads every group once the context has started
		assertThat(this.invoiceRun.run()).isPresent();
	}

	@Test
	void isSkippedOnAFollower() {
		TestLeadership leadership = TestLeadership.of(this.context);
		leadership.revoke("billing"); // another node leads billing now
		try {
			assertThat(this.invoiceRun.run()).isEmpty();
		}
		finally {
			leadership.grant("billing"); // the next test shares the context
		}
	}

}
// end::alone[]
