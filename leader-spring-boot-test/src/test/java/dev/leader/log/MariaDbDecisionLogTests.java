package dev.leader.log;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import dev.leader.FencingToken;
import dev.leader.StaleLeadershipException;
import dev.leader.mariadb.MariaDbCoordinationStore;
import dev.leader.mariadb.MariaDbLogStore;
import dev.leader.node.NodeRegistration;
import dev.leader.test.MigratedMariaDb;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * {@link DecisionLog} against the machine's MariaDB, in a fresh database for the class,
 * emptied before each test; the application's transactions run at MariaDB's default,
 * {@code REPEATABLE READ}. MariaDB has no notifications: a followed node learns of
 * appends from the last indexes that its heartbeat reads, which a thread of the test
 * sends every 100 ms, as the engine would each renew interval; a node learns of its own
 * appends once they commit.
 */
class MariaDbDecisionLogTests extends AbstractDecisionLogTests {

	@RegisterExtension
	static final MigratedMariaDb database = new MigratedMariaDb(12);

	private final List<ScheduledExecutorService> heartbeats = new ArrayList<>();

	MariaDbDecisionLogTests() {
		super(MariaDbCoordinationStore::new);
	}

	@Override
	DataSource dataSource() {
		return database.dataSource();
	}

	@Override
	LogStore logStore(String node, boolean followed) {
		return new MariaDbLogStore(dataSource(), PREFIX, Duration.ofSeconds(5), Duration.ofSeconds(10),
				followed ? heartbeat(node) : null);
	}

	// A coordination store of the node's own that ticks every 100 ms, as the engine's
	// heartbeat would, stopped after the test.
	private MariaDbCoordinationStore heartbeat(String node) {
		MariaDbCoordinationStore store = new MariaDbCoordinationStore(dataSource(), PREFIX, Duration.ofSeconds(5));
		NodeRegistration registration = new NodeRegistration("tail-" + node, "app", "host-" + node, 1);
		ScheduledExecutorService ticks = Executors.newSingleThreadScheduledExecutor();
		ticks.scheduleWithFixedDelay(() -> {
			try {
				store.tick(registration, Map.of(), List.of("g"), Duration.ofSeconds(30), Duration.ofSeconds(10));
			}
			catch (RuntimeException ex) {
				// the next heartbeat tries again, as the engine's would
			}
		}, 0, 100, TimeUnit.MILLISECONDS);
		this.heartbeats.add(ticks);
		return store;
	}

	@Override
	void stopFollowing() {
		for (ScheduledExecutorService ticks : this.heartbeats) {
			ticks.shutdownNow();
			try {
				assertThat(ticks.awaitTermination(10, TimeUnit.SECONDS)).as("heartbeat thread stopped").isTrue();
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		}
	}

	@Override
	boolean expired(String group) {
		return database.leaseExpired(group);
	}

	@Test
	void appendOfALowerTermThanTheLogsIsRejectedEvenUnderAValidLease() {
		FencingToken token = acquire("g", "a");
		DecisionLog a = start("a", false, new RecordingApplier("g"));
		a.append(token, "set", "x");
		// The log has a later term than the lease, as after a failover to a replica that
		// lost the grant of that term.
		this.jdbc.sql("UPDATE leader_log_heads SET last_term = ? WHERE group_name = 'g'")
			.param(token.term() + 5)
			.update();
		assertThatExceptionOfType(StaleLeadershipException.class).isThrownBy(() -> a.append(token, "set", "y"))
			.satisfies((ex) -> assertThat(ex.getCurrentTerm()).isEqualTo(token.term() + 5));
		assertThat(count("leader_log_entries")).isOne();
		assertThat(this.jdbc.sql("SELECT last_index FROM leader_log_heads").query(Long.class).single()).isOne();
	}

	/**
	 * The classic InnoDB deadlock of inserts that wait on a duplicate key whose inserter
	 * rolls back: the first appends of a group must not meet it, because the grant
	 * created the group's log head and appends only update it.
	 */
	@Test
	void firstAppendsWaitingOnOneThatRollsBackAllCommit() throws Exception {
		FencingToken token = acquire("g", "a");
		DecisionLog a = start("a", false, new RecordingApplier("g"));
		CountDownLatch appended = new CountDownLatch(1);
		CountDownLatch rollBack = new CountDownLatch(1);
		CompletableFuture<Void> first = CompletableFuture
			.runAsync(() -> this.transactions.executeWithoutResult((tx) -> {
				a.append(token, "set", "rolled back");
				appended.countDown();
				try {
					rollBack.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
				tx.setRollbackOnly();
			}));
		assertThat(appended.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
		List<CompletableFuture<Bookmark>> waiting = new ArrayList<>();
		for (int i = 0; i < 2; i++) {
			String payload = "committed " + i;
			waiting.add(CompletableFuture
				.supplyAsync(() -> this.transactions.execute((tx) -> a.append(token, "set", payload))));
		}
		await().atMost(TIMEOUT)
			.until(() -> this.jdbc
				.sql("SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'")
				.query(Long.class)
				.single() == 2);
		rollBack.countDown();
		first.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
		List<Long> indexes = new ArrayList<>();
		for (CompletableFuture<Bookmark> append : waiting) {
			indexes.add(append.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS).index());
		}
		assertThat(indexes).containsExactlyInAnyOrder(1L, 2L);
		assertThat(count("leader_log_entries")).isEqualTo(2);
	}

}
