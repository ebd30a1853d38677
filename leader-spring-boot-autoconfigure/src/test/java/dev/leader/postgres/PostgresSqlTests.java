package dev.leader.postgres;

import dev.leader.jdbc.TablePrefix;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The PostgreSQL stores' SQL templates ({@link CoordinationSql}, {@link DaemonSql}),
 * rendered by {@link TablePrefix}. Needs no database.
 */
class PostgresSqlTests {

	private static final TablePrefix PREFIX = new TablePrefix("app_leader_");

	@Test
	void everyStatementOfTheStoresRendersWithTheTablePrefixAndNoPlaceholderLeft() {
		CoordinationSql coordination = new CoordinationSql(PREFIX);
		DaemonSql daemons = new DaemonSql(PREFIX);
		assertThat(new String[] { coordination.acquire(), coordination.tick(), coordination.tickWithDaemons(),
				coordination.release(), coordination.deregister(), coordination.leases(), daemons.read(),
				daemons.assign(), daemons.revoke(), daemons.reclaim(), daemons.acknowledge(), daemons.release(),
				daemons.request(), daemons.drain(), daemons.forget(), daemons.lock() })
			.allSatisfy((sql) -> assertThat(sql).contains("app_leader_").doesNotContain("${").doesNotContain("%s"));
	}

}
