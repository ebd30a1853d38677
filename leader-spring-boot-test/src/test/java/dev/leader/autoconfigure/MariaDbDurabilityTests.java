package dev.leader.autoconfigure;

import dev.leader.jdbc.JdbcStoresAutoConfiguration;
import dev.leader.mariadb.MariaDbStoresAutoConfiguration;
import dev.leader.postgres.PostgresStoresAutoConfiguration;
import dev.leader.test.TemporaryMariaDb;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The starter on a MariaDB server that may lose an acknowledged commit in a crash starts,
 * and says at startup which setting makes it so and what to change: a lost grant could be
 * granted again under the same term. The server is one of the test's own
 * ({@link TemporaryMariaDb}), since {@code log_bin} cannot be changed on a running
 * server; it runs with the binary log on, as a replication primary does, and each test
 * sets {@code sync_binlog} and {@code innodb_flush_log_at_trx_commit} globally on it.
 */
@ExtendWith(OutputCaptureExtension.class)
class MariaDbDurabilityTests {

	private static final String WARNING = "MariaDB may lose a commit in a crash";

	private static TemporaryMariaDb server;

	@BeforeAll
	static void startServer() {
		server = TemporaryMariaDb.start("--log-bin=binlog", "--server-id=1");
		server.execute("CREATE DATABASE app");
	}

	@AfterAll
	static void stopServer() {
		if (server != null) {
			server.close();
		}
	}

	// The server's defaults.
	@AfterEach
	void resetDurability() {
		server.execute("SET GLOBAL sync_binlog = 0", "SET GLOBAL innodb_flush_log_at_trx_commit = 1");
	}

	@Test
	void binaryLogThatTheServerDoesNotSyncAtEachCommitIsWarnedAboutAtStartupWithWhatToChange(CapturedOutput output) {
		startsAndWarns(output, "the binary log is on (log_bin) and sync_binlog is 0",
				"even with innodb_flush_log_at_trx_commit=1",
				"Set innodb_flush_log_at_trx_commit=1 and, with the " + "binary log on, sync_binlog=1");
	}

	@Test
	void binaryLogSyncedOnlyEveryFewCommitsIsWarnedAbout(CapturedOutput output) {
		server.execute("SET GLOBAL sync_binlog = 10");
		startsAndWarns(output, "sync_binlog is 10", "only every 10 commits");
	}

	@Test
	void redoLogFlushedOnlyOnceASecondIsWarnedAboutEvenWithTheBinaryLogSynced(CapturedOutput output) {
		server.execute("SET GLOBAL sync_binlog = 1", "SET GLOBAL innodb_flush_log_at_trx_commit = 2");
		startsAndWarns(output, "innodb_flush_log_at_trx_commit is 2",
				"a crash of the operating system or a power loss");
		assertThat(output).doesNotContain("sync_binlog is");
	}

	@Test
	void serverThatSyncsBothLogsAtEachCommitStartsWithoutAWarning(CapturedOutput output) {
		server.execute("SET GLOBAL sync_binlog = 1");
		contextRunner().run((context) -> assertThat(context).hasNotFailed());
		// 3 flushes at prepare and at commit: as durable as 1.
		server.execute("SET GLOBAL innodb_flush_log_at_trx_commit = 3");
		contextRunner().run((context) -> assertThat(context).hasNotFailed());
		assertThat(output).contains("Successfully validated")
			.doesNotContain(WARNING)
			.doesNotContain("innodb_flush_log_at_trx_commit is");
	}

	@Test
	void serverWithoutABinaryLogThatFlushesAtEachCommitStartsWithoutAWarning(CapturedOutput output) {
		try (TemporaryMariaDb plain = TemporaryMariaDb.start()) {
			plain.execute("CREATE DATABASE app", "SET GLOBAL sync_binlog = 0");
			new ApplicationContextRunner()
				.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
						PostgresStoresAutoConfiguration.class, MariaDbStoresAutoConfiguration.class,
						JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class))
				.withPropertyValues("spring.datasource.url=" + plain.url("app"), "spring.datasource.username=root",
						"leader.node.id=durable-node")
				.run((context) -> assertThat(context).hasNotFailed());
		}
		assertThat(output).contains("Successfully validated").doesNotContain(WARNING);
	}

	private void startsAndWarns(CapturedOutput output, String... reasons) {
		contextRunner().run((context) -> assertThat(context).hasNotFailed());
		assertThat(output).contains(WARNING).contains(reasons);
	}

	private ApplicationContextRunner contextRunner() {
		return new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
					PostgresStoresAutoConfiguration.class, MariaDbStoresAutoConfiguration.class,
					JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class))
			.withPropertyValues("spring.datasource.url=" + server.url("app"), "spring.datasource.username=root",
					"leader.node.id=durable-node");
	}

}
