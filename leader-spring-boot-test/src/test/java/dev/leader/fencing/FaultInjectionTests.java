package dev.leader.fencing;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

import dev.leader.test.FaultHistory;
import dev.leader.test.FaultHistory.FaultKind;
import dev.leader.test.ReplicatedPostgres;
import dev.leader.test.ReplicatedPostgres.Promotion;
import dev.leader.test.TemporaryPostgres;
import dev.leader.test.TestNode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.simple.JdbcClient;

import static org.awaitility.Awaitility.await;

/**
 * The fault run of {@link AbstractFaultInjectionTests} on PostgreSQL: a primary and an
 * asynchronous streaming standby of the test's own ({@link ReplicatedPostgres}), which
 * the nodes reach with a multi-host URL ({@code targetServerType=primary}) through a
 * proxy per server and node. A node's sessions are terminated with
 * {@code pg_terminate_backend}, found by the role it logs in with.
 * <p>
 * The durability rows: {@code synchronous_commit} {@code off}, {@code local}, and
 * {@code on} with the standby synchronous ({@code synchronous_standby_names = '*'}), set
 * with {@code ALTER SYSTEM} on the primary, which is the test's own. The server events:
 * with the standby asynchronous, a failover that loses commits (the standby stops
 * receiving WAL, the leaders go on appending, the primary crashes with
 * {@code pg_ctl stop -m immediate}, the standby is promoted) and an immediate restart;
 * with it synchronous, the standby cut off for two leases, so that commits wait, then
 * promoted after the primary's crash, and an immediate restart. After a failover, a new
 * standby is made of the new primary.
 * <p>
 * The normal suite runs {@value #EPISODES} episodes, every cell once. The long run is
 * {@code ./mvnw -pl leader-spring-boot-test -am verify -Dtest=FaultInjectionTests -Dsurefire.failIfNoSpecifiedTests=false -Dfault.episodes=540};
 * {@code -Dfault.seed=N} repeats a run's choices. The summary goes to
 * {@code target/fault-summary.txt}.
 */
class FaultInjectionTests extends AbstractFaultInjectionTests {

	private static final int EPISODES = 18;

	/**
	 * Connections a node needs besides its load: two that the engine's store keeps, one
	 * for the fenced writer, and one to spare.
	 */
	private static final int POOL_SIZE_WITHOUT_LOAD = 4;

	private static final String OFF = "synchronous_commit=off";

	private static final String LOCAL = "synchronous_commit=local";

	private static final String SYNCHRONOUS = "synchronous_commit=on+synchronous-standby";

	private static final Duration APPENDS_AFTER_CUT = Duration.ofSeconds(15);

	/**
	 * Static, so that the server starts before the cluster, an instance's extension,
	 * creates its database; it starts before and stops after each test all the same.
	 */
	@RegisterExtension
	static final ReplicatedPostgres PAIR = new ReplicatedPostgres();

	FaultInjectionTests() {
		super(TestNode.cluster(FAST, PAIR::createSchema, ALPHA, BETA), POOL_SIZE_WITHOUT_LOAD, EPISODES,
				"fault-summary.txt");
	}

	/**
	 * Makes commits stop waiting for a standby before the cluster drops its schema: a run
	 * that failed while the standby was cut off would otherwise hang there.
	 */
	@AfterEach
	void replicateAsynchronously() {
		if (PAIR.isSynchronous()) {
			PAIR.replicateSynchronously(false);
		}
	}

	@Override
	List<String> durabilityRows() {
		return List.of(OFF, LOCAL, SYNCHRONOUS);
	}

	@Override
	void applyDurability(String row) {
		try (Connection connection = PAIR.primary().connect(); Statement statement = connection.createStatement()) {
			statement.execute("ALTER SYSTEM SET synchronous_commit = "
					+ (row.equals(OFF) ? "off" : row.equals(LOCAL) ? "local" : "on"));
			statement.execute("SELECT pg_reload_conf()");
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not set " + row, ex);
		}
		boolean synchronous = row.equals(SYNCHRONOUS);
		if (PAIR.isSynchronous() != synchronous) {
			PAIR.replicateSynchronously(synchronous);
		}
	}

	@Override
	List<FaultKind> serverEvents(String row) {
		return row.equals(SYNCHRONOUS) ? List.of(FaultKind.STANDBY_CUT, FaultKind.RESTART)
				: List.of(FaultKind.FAILOVER, FaultKind.RESTART);
	}

	@Override
	ServerEvent injectServerEvent(FaultKind kind, String row) {
		long startedAt = System.nanoTime();
		return switch (kind) {
			case RESTART -> {
				PAIR.restart("immediate", Duration.ofMillis(500));
				yield new ServerEvent(startedAt, System.nanoTime(), "pg_ctl restart -m immediate");
			}
			case FAILOVER -> {
				// An asynchronous row: commits must not wait for the standby that stops.
				applyDurability(row);
				TemporaryPostgres standby = PAIR.standby().orElseThrow();
				standby.stopStreaming();
				long cut = logEntries();
				// Appends the standby will lack; a leader that a fault has just hit may
				// append none for a while, and the failover goes on without them.
				long deadline = System.nanoTime() + APPENDS_AFTER_CUT.toNanos();
				while (logEntries() < cut + 3 && System.nanoTime() < deadline) {
					FaultHistory.sleepAsFault(Duration.ofMillis(100));
				}
				long beforeCrash = logEntries();
				Promotion promotion = PAIR.failover();
				long lost = beforeCrash - logEntries();
				PAIR.replaceStandby();
				applyDurability(row);
				yield new ServerEvent(startedAt, promotion.accepted(),
						"asynchronous failover, lost at least " + lost + " log entries");
			}
			case STANDBY_CUT -> {
				TemporaryPostgres standby = PAIR.standby().orElseThrow();
				standby.stopStreaming();
				FaultHistory.sleepAsFault(FAST.duration().multipliedBy(2));
				Promotion promotion = PAIR.failover();
				PAIR.replaceStandby();
				PAIR.replicateSynchronously(true);
				applyDurability(row);
				yield new ServerEvent(startedAt, promotion.accepted(), "synchronous standby cut off for "
						+ FAST.duration().multipliedBy(2).toMillis() + " ms, then promoted");
			}
			default -> throw new IllegalArgumentException("Not a server event: " + kind);
		};
	}

	/**
	 * Counts the log entries on the primary; after a failover, the test's pool may hand
	 * out a connection to the crashed server first.
	 */
	private long logEntries() {
		return await("the primary's log").atMost(Duration.ofSeconds(15))
			.ignoreExceptions()
			.until(() -> JdbcClient.create(this.cluster.dataSource())
				.sql("SELECT count(*) FROM leader_log_entries")
				.query(Long.class)
				.single(), Objects::nonNull);
	}

}
