package dev.leader.docs.testing;

import java.time.Duration;

import dev.leader.Leadership;
import dev.leader.test.TestDatabase;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import static org.assertj.core.api.Assertions.assertThat;

// tag::single-node[]
@SpringBootTest(properties = "leader.lease.yield-cooldown=2s")
class InvoiceRunTests {

	@DynamicPropertySource
	static void database(DynamicPropertyRegistry registry) {
		// a fresh schema for this class
		TestDatabase database = TestDatabase.createSchema();
		registry.add("spring.datasource.url", database::url);
		registry.add("spring.datasource.username", database::user);
		registry.add("spring.datasource.password", database::password);
	}

	@Autowired
	Leadership leadership;

	@Autowired
	InvoiceRun invoiceRun;

	@BeforeEach
	void leadBilling() throws InterruptedException {
		// the only node wins at once, or once an earlier holder's lease expired
		assertThat(this.leadership.awaitLeadership("billing", Duration.ofSeconds(30))).isTrue();
	}

	@Test
	void runsOnTheLeader() {
		assertThat(this.invoiceRun.run()).isPresent();
	}

	@Test
	void isSkippedOnAFollower() {
		// out of the election for the cooldown
		assertThat(this.leadership.yield("billing")).isTrue();
		assertThat(this.invoiceRun.run()).isEmpty();
	}

}
// end::single-node[]
