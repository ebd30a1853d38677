package dev.leader.log;

import javax.sql.DataSource;

import dev.leader.test.ConnectorJ;
import dev.leader.test.MigratedMariaDb;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The decision log's cases on MariaDB reached through MySQL's driver (Connector/J), on a
 * database of their own: every case of {@link MariaDbDecisionLogTests}, whose database
 * stays unused here.
 */
class MariaDbConnectorJDecisionLogTests extends MariaDbDecisionLogTests {

	@RegisterExtension
	static final MigratedMariaDb connectorJ = new MigratedMariaDb(12, ConnectorJ::use);

	@Override
	DataSource dataSource() {
		return connectorJ.dataSource();
	}

	@Override
	boolean expired(String group) {
		return connectorJ.leaseExpired(group);
	}

}
