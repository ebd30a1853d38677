package dev.leader.alone;

import java.time.Duration;
import java.util.UUID;

import dev.leader.test.AbstractDaemonStoreContractTests;

import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.SimpleDriverDataSource;

/**
 * The daemon assignments of a node that runs alone pass the contract of every daemon
 * store, in the transactions of an in-memory H2 database.
 */
class LocalDaemonStoreContractTests extends AbstractDaemonStoreContractTests {

	@Override
	protected Stores createStores() {
		LocalStores stores = new LocalStores(Duration.ofSeconds(3));
		return new Stores(stores.coordinationStore(), stores.daemonStore(), new DataSourceTransactionManager(
				new SimpleDriverDataSource(new org.h2.Driver(), "jdbc:h2:mem:" + UUID.randomUUID(), "sa", "")));
	}

}
