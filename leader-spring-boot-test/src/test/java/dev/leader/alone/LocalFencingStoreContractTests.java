package dev.leader.alone;

import java.time.Duration;
import java.util.UUID;

import dev.leader.test.AbstractFencingStoreContractTests;

import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.SimpleDriverDataSource;

/**
 * The guards and fences of a node that runs alone pass the contract of every fencing
 * store, in the transactions of an in-memory H2 database.
 */
class LocalFencingStoreContractTests extends AbstractFencingStoreContractTests {

	@Override
	protected Stores createStores() {
		LocalStores stores = new LocalStores(Duration.ofSeconds(3));
		return new Stores(stores.coordinationStore(), stores.fencingStore(), new DataSourceTransactionManager(
				new SimpleDriverDataSource(new org.h2.Driver(), "jdbc:h2:mem:" + UUID.randomUUID(), "sa", "")));
	}

	@Override
	protected boolean sharedByProcesses() {
		return false;
	}

}
