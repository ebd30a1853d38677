package dev.leader.docs.postgresql;

import javax.sql.DataSource;

import dev.leader.FencingToken;
import dev.leader.LeaderDataSource;
import dev.leader.LeaderOnly;

import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

// tag::fenced[]
@Component
class LedgerExport {

	private final JdbcClient coordination;

	LedgerExport(@LeaderDataSource DataSource coordination) {
		this.coordination = JdbcClient.create(coordination);
	}

	// The fence and the writes in one transaction, on the coordination database.
	@LeaderOnly(group = "ledger", fenced = true)
	@Transactional("coordinationTransactionManager")
	void export() {
		this.coordination.sql("INSERT INTO ledger_exports (term) VALUES (:term)")
			.param("term", FencingToken.current().term())
			.update();
	}

}
// end::fenced[]
