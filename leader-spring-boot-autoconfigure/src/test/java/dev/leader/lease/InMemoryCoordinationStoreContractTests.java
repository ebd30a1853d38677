package dev.leader.lease;

import java.time.Duration;

/**
 * The in-memory store of the fast test tier passes the same contract as the real stores, so that what the engine's
 * unit tests show against it holds against them too.
 */
class InMemoryCoordinationStoreContractTests extends AbstractCoordinationStoreContractTests {

	@Override
	protected CoordinationStore createStore() {
		// A round trip's worth of latency, without which the first racer of the fuzz test wins every race.
		return new InMemoryCoordinationStore(Duration.ofMillis(1));
	}

	@Override
	protected boolean supportsReleaseNotifications() {
		return true;
	}

}
