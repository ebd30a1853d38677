package dev.leader.mariadb;

import java.time.Duration;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.jdbc.TablePrefix;
import dev.leader.test.AbstractDaemonStoreContractTests;
import dev.leader.test.ConnectorJ;
import dev.leader.test.MigratedMariaDb;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/**
 * {@link MariaDbDaemonStore} reached through MySQL's driver (Connector/J) passes the
 * daemon store contract on the machine's MariaDB.
 */
class MariaDbConnectorJDaemonStoreContractTests extends AbstractDaemonStoreContractTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	@RegisterExtension
	static final MigratedMariaDb database = new MigratedMariaDb(10, ConnectorJ::use);

	@Override
	protected Stores createStores() {
		HikariDataSource dataSource = database.dataSource();
		return new Stores(new MariaDbCoordinationStore(dataSource, PREFIX, Duration.ofSeconds(5)),
				new MariaDbDaemonStore(dataSource, PREFIX, Duration.ofSeconds(5), Duration.ofSeconds(10)),
				new DataSourceTransactionManager(dataSource));
	}

}
