package dev.leader.alone;

import java.time.Duration;

import dev.leader.test.AbstractLogStoreContractTests;

/**
 * The decision log of a node that runs alone, kept in memory, passes the contract of
 * every log store, with retention.
 */
class LocalLogStoreContractTests extends AbstractLogStoreContractTests {

	@Override
	protected Stores createStores() {
		LocalStores stores = new LocalStores(Duration.ofSeconds(3));
		return new Stores(stores.coordinationStore(), stores.logStore());
	}

	@Override
	protected boolean hasRetention() {
		return true;
	}

}
