package dev.leader.alone;

import java.time.Duration;

import dev.leader.lease.CoordinationStore;
import dev.leader.test.AbstractCoordinationStoreContractTests;

/**
 * The coordination store of a node that runs alone passes the contract of every
 * coordination store, though only one node ever uses it.
 */
class LocalCoordinationStoreContractTests extends AbstractCoordinationStoreContractTests {

	@Override
	protected CoordinationStore createStore() {
		return new LocalStores(Duration.ofSeconds(3)).coordinationStore();
	}

	@Override
	protected boolean supportsReleaseNotifications() {
		return true;
	}

	@Override
	protected boolean sharedByProcesses() {
		return false;
	}

}
