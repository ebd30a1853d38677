package dev.leader.lease;

import java.nio.file.Files;
import java.time.Duration;
import java.util.List;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leader.jdbc.LeaderSchemaMigration;
import dev.leader.jdbc.TablePrefix;
import dev.leader.node.NodeRegistration;
import dev.leader.postgres.PostgresCoordinationStore;
import dev.leader.test.TemporaryPostgres;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A forward step of the database server's clock, made for real: the server runs under
 * libfaketime with an offset read from a file, and the test writes a new offset while a
 * node leads. Leases are timed by the database clock, so the node cannot prevent the
 * early end of its lease, but it notices the step, logs it and counts it.
 */
@ExtendWith(OutputCaptureExtension.class)
class DatabaseClockTests {

	private static final LeaseSettings FAST = new LeaseSettings(Duration.ofSeconds(2), Duration.ofMillis(500),
			Duration.ofMillis(500), Duration.ofMillis(100), Duration.ofSeconds(2), Duration.ofSeconds(3));

	@Test
	void forwardStepOfTheDatabaseClockBeyondTheSafetyMarginIsLoggedAndCounted(CapturedOutput output) throws Exception {
		try (TemporaryPostgres server = TemporaryPostgres.startWithSteppableClock()) {
			HikariConfig config = new HikariConfig();
			config.setJdbcUrl(server.url());
			config.setUsername("postgres");
			config.setMaximumPoolSize(4);
			try (HikariDataSource dataSource = new HikariDataSource(config)) {
				new LeaderSchemaMigration(dataSource, new TablePrefix("leader_")).migrate();
				LeaderEngine engine = new LeaderEngine(
						new PostgresCoordinationStore(dataSource, new TablePrefix("leader_"), Duration.ofSeconds(2)),
						FAST, new NodeRegistration("node-1", "app", "localhost", 1), List.of("default"), (event) -> {
						});
				engine.start();
				try {
					assertThat(engine.awaitLeadership("default", Duration.ofSeconds(5))).isTrue();
					// Several heartbeats on a steady clock: none of them is a step.
					await().pollDelay(Duration.ofMillis(1500)).atMost(Duration.ofSeconds(2)).until(() -> true);
					assertThat(engine.databaseClockSteps()).isZero();
					Files.writeString(server.clockOffsetFile(), "+5\n");
					await().atMost(Duration.ofSeconds(5)).until(() -> engine.databaseClockSteps() == 1);
					assertThat(output).contains("Leader node node-1 saw the database clock step forward");
					// The clock runs steadily again from its new offset.
					await().pollDelay(Duration.ofMillis(1500)).atMost(Duration.ofSeconds(2)).until(() -> true);
					assertThat(engine.databaseClockSteps()).isEqualTo(1);
				}
				finally {
					engine.stop();
				}
			}
		}
	}

}
