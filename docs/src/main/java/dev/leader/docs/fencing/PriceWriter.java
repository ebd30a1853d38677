package dev.leader.docs.fencing;

import java.math.BigDecimal;

import dev.leader.FencingToken;
import dev.leader.Leadership;
import dev.leader.fencing.Fencing;

import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Component;
import org.springframework.transaction.support.TransactionTemplate;

// tag::guard[]
@Component
class PriceWriter {

	private final Leadership leadership;

	private final Fencing fencing;

	private final TransactionTemplate transactions;

	private final JdbcClient jdbc;

	PriceWriter(Leadership leadership, Fencing fencing, TransactionTemplate transactions, JdbcClient jdbc) {
		this.leadership = leadership;
		this.fencing = fencing;
		this.transactions = transactions;
		this.jdbc = jdbc;
	}

	void setPrice(String sku, BigDecimal price) {
		// empty unless this node leads
		FencingToken token = this.leadership.token("pricing").orElseThrow();
		this.transactions.executeWithoutResult((status) -> {
			// StaleLeadershipException, and a rollback, once the term is gone
			this.fencing.guard(token);
			this.jdbc.sql("UPDATE prices SET price = :price WHERE sku = :sku")
				.param("price", price)
				.param("sku", sku)
				.update();
		});
	}

}
// end::guard[]
