package dev.leader.mariadb;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leader.FencingToken;
import dev.leader.daemon.Assignment;
import dev.leader.fencing.Fencing;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.CoordinationStore.Tick;
import dev.leader.log.LogStore;
import dev.leader.node.NodeRegistration;
import dev.leader.test.ConnectorJ;
import dev.leader.test.Grants;
import dev.leader.test.MigratedMariaDb;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The guards of the MariaDB stores in an application's transaction, on a pool at each
 * isolation level an application can set, with auto-commit on and off: the lease guard,
 * the daemon guard and an append that joins the transaction conflict only with a change
 * of holder (a release, a reclaim), never with the holder's renewal or the node's own
 * acknowledgement. At {@code SERIALIZABLE}, InnoDB turns every plain read of a
 * transaction with auto-commit off into a shared lock: the guards' reads of the lease and
 * assignment rows held the renewal and the acknowledgement up until the guarded
 * transaction ended, and a leader under guarded load lost its lease. Each case runs
 * through MariaDB's driver and through MySQL's (Connector/J).
 */
class MariaDbGuardIsolationTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	private static final Duration QUERY_TIMEOUT = Duration.ofSeconds(5);

	private static final Duration LEASE = Duration.ofSeconds(30);

	private static final NodeRegistration NODE = new NodeRegistration("a", "a", "host-a", 1, Set.of("outbox"));

	@RegisterExtension
	static final MigratedMariaDb database = new MigratedMariaDb(2);

	@BeforeEach
	void createTable() {
		JdbcClient jdbc = JdbcClient.create(database.dataSource());
		jdbc.sql("CREATE TABLE IF NOT EXISTS writes (term BIGINT NOT NULL)").update();
		jdbc.sql("DELETE FROM writes").update();
	}

	@ParameterizedTest(name = "{0}, auto-commit {1}")
	@MethodSource("dev.leader.fencing.MariaDbIsolationLoadTests#poolSettings")
	void guardedTransactionHoldsUpAReleaseButNeitherTheHoldersRenewalNorItsAcknowledgement(String isolation,
			boolean autoCommit) throws Exception {
		guardedTransactionHoldsUpOnlyAChangeOfHolder(isolation, autoCommit, (config) -> {
		});
	}

	@ParameterizedTest(name = "{0}, auto-commit {1}")
	@MethodSource("dev.leader.fencing.MariaDbIsolationLoadTests#poolSettings")
	void guardedTransactionThroughMySqlsDriverHoldsUpAReleaseButNeitherTheHoldersRenewalNorItsAcknowledgement(
			String isolation, boolean autoCommit) throws Exception {
		guardedTransactionHoldsUpOnlyAChangeOfHolder(isolation, autoCommit, ConnectorJ::use);
	}

	private void guardedTransactionHoldsUpOnlyAChangeOfHolder(String isolation, boolean autoCommit,
			Consumer<HikariConfig> driver) throws Exception {
		try (HikariDataSource pool = database.database().dataSource(8, (config) -> {
			driver.accept(config);
			config.setTransactionIsolation(isolation);
			config.setAutoCommit(autoCommit);
		})) {
			MariaDbCoordinationStore coordination = new MariaDbCoordinationStore(pool, PREFIX, QUERY_TIMEOUT);
			MariaDbDaemonStore daemons = new MariaDbDaemonStore(pool, PREFIX, QUERY_TIMEOUT, Duration.ofSeconds(10));
			Fencing fencing = new Fencing(
					new MariaDbFencingStore(pool, PREFIX, QUERY_TIMEOUT, Duration.ofSeconds(10), coordination), "a");
			MariaDbLogStore log = new MariaDbLogStore(pool, PREFIX, QUERY_TIMEOUT, Duration.ofSeconds(10),
					coordination);
			TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(pool));
			coordination.tick(NODE, Map.of(), List.of(), LEASE, LEASE);
			FencingToken token = new FencingToken("g", Grants.acquire(coordination, "g", NODE, LEASE).lease().term());
			assertThat(daemons.assign(token, "a", "outbox", "a", 0)).isOne();
			CountDownLatch guarded = new CountDownLatch(1);
			CountDownLatch letGo = new CountDownLatch(1);
			CompletableFuture<LogStore.Appended> writer = CompletableFuture
				.supplyAsync(() -> transactions.execute((tx) -> {
					JdbcClient jdbc = JdbcClient.create(pool);
					// A read first, so that a REPEATABLE READ transaction has its
					// snapshot.
					jdbc.sql("SELECT count(*) FROM writes").query(Long.class).single();
					fencing.guard(token);
					Assignment assignment = daemons.lock("outbox");
					assertThat(assignment).extracting(Assignment::node, Assignment::generation, Assignment::isLive)
						.containsExactly("a", 1L, true);
					LogStore.Appended appended = log.append(token, "a", "decision", "1");
					jdbc.sql("INSERT INTO writes (term) VALUES (?)").param(token.term()).update();
					guarded.countDown();
					await().atMost(Duration.ofSeconds(20)).until(() -> letGo.getCount() == 0);
					return appended;
				}));
			assertThat(guarded.await(10, TimeUnit.SECONDS)).as("the guards locked").isTrue();
			Tick renewal = CompletableFuture
				.supplyAsync(() -> coordination.tick(NODE, Map.of("g", token.term()), List.of("g"), LEASE, LEASE))
				.get(3, TimeUnit.SECONDS);
			assertThat(renewal.renewed()).containsKey("g");
			assertThat(
					CompletableFuture.supplyAsync(() -> daemons.acknowledge("a", "outbox", 1)).get(3, TimeUnit.SECONDS))
				.isTrue();
			CompletableFuture<Collection<String>> release = CompletableFuture
				.supplyAsync(() -> coordination.release("a", Map.of("g", token.term())));
			await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(3)).until(() -> !release.isDone());
			letGo.countDown();
			assertThat(writer.get(10, TimeUnit.SECONDS).entry()).isNotNull();
			assertThat(release.get(10, TimeUnit.SECONDS)).containsExactly("g");
			assertThat(JdbcClient.create(database.dataSource())
				.sql("SELECT count(*) FROM writes")
				.query(Long.class)
				.single()).isOne();
			coordination.disconnect();
		}
	}

}
