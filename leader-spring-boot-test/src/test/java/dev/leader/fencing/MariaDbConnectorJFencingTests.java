package dev.leader.fencing;

import javax.sql.DataSource;

import dev.leader.lease.LeaseState;
import dev.leader.mariadb.MariaDbCoordinationStore;
import dev.leader.mariadb.MariaDbFencingStore;
import dev.leader.test.ConnectorJ;
import dev.leader.test.MigratedMariaDb;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The fencing suite on MariaDB reached through MySQL's driver (Connector/J): the guards
 * and their hold limits in the application's transactions, as through MariaDB's driver
 * ({@link MariaDbFencingTests}).
 */
class MariaDbConnectorJFencingTests extends AbstractFencingTests {

	@RegisterExtension
	static final MigratedMariaDb database = new MigratedMariaDb(8, ConnectorJ::use);

	MariaDbConnectorJFencingTests() {
		super(MariaDbCoordinationStore::new,
				(dataSource, prefix, queryTimeout, holdLimit, coordination) -> new MariaDbFencingStore(dataSource,
						prefix, queryTimeout, holdLimit, (MariaDbCoordinationStore) coordination),
				new SlowStatement("SELECT SLEEP(10)", "max_statement_time"));
	}

	@Override
	DataSource dataSource() {
		return database.dataSource();
	}

	@Override
	boolean expired(String group) {
		return this.leases.leases()
			.stream()
			.filter((lease) -> lease.group().equals(group))
			.noneMatch(LeaseState::isHeld);
	}

}
