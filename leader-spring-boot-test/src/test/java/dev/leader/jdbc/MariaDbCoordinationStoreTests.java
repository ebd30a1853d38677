package dev.leader.jdbc;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import dev.leader.lease.CoordinationStore;
import dev.leader.lease.CoordinationStore.AcquireResult;
import dev.leader.node.NodeRegistration;
import dev.leader.test.AbstractCoordinationStoreContractTests;
import dev.leader.test.FreezeAfterLock;
import dev.leader.test.MigratedMariaDb;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * {@link MariaDbCoordinationStore} against the machine's MariaDB passes the coordination
 * store contract, in a fresh database for the class, migrated by the starter's own Flyway
 * migrations and emptied before each test. It announces no releases.
 */
class MariaDbCoordinationStoreTests extends AbstractCoordinationStoreContractTests {

	// One connection per racing node in the fuzz test, and some to spare.
	@RegisterExtension
	static final MigratedMariaDb database = new MigratedMariaDb(12);

	@Override
	protected CoordinationStore createStore() {
		return new MariaDbCoordinationStore(database.dataSource(), new TablePrefix("leader_"), Duration.ofSeconds(3));
	}

	/**
	 * A node frozen in the middle of its heartbeat, after the renewal locked its lease
	 * rows (a paused process, a stalled network): the server ends its idle transaction
	 * after the query timeout, so another node's grant of the expired lease is not held
	 * up for as long as the node stays frozen. A fault run caught a 3.8 s pause holding
	 * both groups of a node.
	 */
	@Test
	void nodeFrozenInsideItsHeartbeatHoldsAnotherNodesGrantUpOnlyUntilTheIdleLimit() throws Exception {
		CoordinationStore store = createStore();
		long term = store.acquire("g", "a", Duration.ofSeconds(1)).lease().term();
		FreezeAfterLock freeze = new FreezeAfterLock("UPDATE leader_leases SET renewed_at");
		MariaDbCoordinationStore frozen = new MariaDbCoordinationStore(freeze.wrap(database.dataSource()),
				new TablePrefix("leader_"), Duration.ofSeconds(1));
		NodeRegistration node = new NodeRegistration("a", "app", "host-a", 1);
		CompletableFuture<?> heartbeat = CompletableFuture.runAsync(
				() -> frozen.tick(node, Map.of("g", term), List.of(), Duration.ofSeconds(1), Duration.ofSeconds(10)));
		try {
			assertThat(freeze.frozen.await(5, TimeUnit.SECONDS)).as("the heartbeat froze after its renewal").isTrue();
			await().atMost(Duration.ofSeconds(5)).until(() -> database.leaseExpired("g"));
			long start = System.nanoTime();
			AcquireResult takeover = CompletableFuture
				.supplyAsync(() -> store.acquire("g", "b", Duration.ofSeconds(10)))
				.get(10, TimeUnit.SECONDS);
			assertThat(takeover.granted()).isTrue();
			assertThat(takeover.lease().term()).isEqualTo(term + 1);
			assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofMillis(2500));
		}
		finally {
			freeze.thaw.countDown();
		}
		assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> heartbeat.get(10, TimeUnit.SECONDS));
	}

}
