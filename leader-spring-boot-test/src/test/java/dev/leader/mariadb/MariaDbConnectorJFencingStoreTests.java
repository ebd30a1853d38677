package dev.leader.mariadb;

import java.time.Duration;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.jdbc.TablePrefix;
import dev.leader.test.AbstractFencingStoreContractTests;
import dev.leader.test.ConnectorJ;
import dev.leader.test.MigratedMariaDb;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/**
 * {@link MariaDbFencingStore} reached through MySQL's driver (Connector/J) passes the
 * fencing store contract on the machine's MariaDB.
 */
class MariaDbConnectorJFencingStoreTests extends AbstractFencingStoreContractTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	@RegisterExtension
	static final MigratedMariaDb database = new MigratedMariaDb(12, ConnectorJ::use);

	@Override
	protected Stores createStores() {
		HikariDataSource dataSource = database.dataSource();
		MariaDbCoordinationStore coordination = new MariaDbCoordinationStore(dataSource, PREFIX, Duration.ofSeconds(5));
		return new Stores(coordination,
				new MariaDbFencingStore(dataSource, PREFIX, Duration.ofSeconds(5), Duration.ofSeconds(5), coordination),
				new DataSourceTransactionManager(dataSource));
	}

}
