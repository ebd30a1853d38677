package dev.leader.log;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import dev.leader.FencingToken;
import dev.leader.StaleLeadershipException;
import dev.leader.jdbc.MariaDbCoordinationStore;
import dev.leader.jdbc.MariaDbLogStore;
import dev.leader.lease.CoordinationStore;
import dev.leader.node.NodeRegistration;
import dev.leader.test.MigratedMariaDb;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.simple.JdbcClient;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

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

	@BeforeAll
	static void createDecisionsTable() {
		JdbcClient.create(database.dataSource())
			.sql("CREATE TABLE decisions (payload VARCHAR(100) NOT NULL) ENGINE = InnoDB")
			.update();
	}

	@Override
	DataSource dataSource() {
		return database.dataSource();
	}

	@Override
	CoordinationStore coordinationStore() {
		return new MariaDbCoordinationStore(dataSource(), PREFIX, Duration.ofSeconds(5));
	}

	@Override
	LogStore logStore(String node, boolean followed) {
		MariaDbCoordinationStore heartbeat = null;
		if (followed) {
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
			heartbeat = store;
		}
		return new MariaDbLogStore(dataSource(), PREFIX, Duration.ofSeconds(5), Duration.ofSeconds(10), heartbeat);
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
		return this.jdbc.sql("SELECT expires_at <= UTC_TIMESTAMP(6) FROM leader_leases WHERE group_name = ?")
			.param(group)
			.query(Boolean.class)
			.single();
	}

	@Test
	void appendOfALowerTermThanTheLogsIsRejectedEvenUnderAValidLease() {
		FencingToken token = acquire("g", "a");
		DecisionLog a = start("a", false, new Recorder("g"));
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

}
