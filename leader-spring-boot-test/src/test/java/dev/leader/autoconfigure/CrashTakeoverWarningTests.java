package dev.leader.autoconfigure;

import java.util.UUID;

import dev.leader.LeaderOnly;
import dev.leader.jdbc.JdbcStoresAutoConfiguration;
import dev.leader.mariadb.MariaDbStoresAutoConfiguration;
import dev.leader.postgres.PostgresStoresAutoConfiguration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The startup warning about a group with crash takeover whose leader-only work is not
 * fenced.
 */
@ExtendWith(OutputCaptureExtension.class)
class CrashTakeoverWarningTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
				PostgresStoresAutoConfiguration.class, MariaDbStoresAutoConfiguration.class,
				JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class))
		.withPropertyValues("spring.datasource.url=jdbc:h2:mem:" + UUID.randomUUID())
		.withBean(Reports.class)
		.withBean(Billing.class);

	@Test
	void groupWhoseLeaderOnlyWorkIsAllUnfencedIsAWarningAndAFencedOneIsNot(CapturedOutput output) {
		this.runner.withPropertyValues("leader.lease.crash-takeover-groups=reports,billing,audit")
			.run((context) -> assertThat(context).hasNotFailed());
		assertThat(output.getOut().lines().filter((line) -> line.contains("has crash takeover")))
			.satisfiesExactlyInAnyOrder(
					(line) -> assertThat(line).contains("WARN")
						.contains("Group 'reports'")
						.contains("None of its @LeaderOnly work is fenced ([crashTakeoverWarningTests.Reports.run])"),
					(line) -> assertThat(line).contains("INFO")
						.contains("Group 'billing'")
						.contains("@LeaderOnly [crashTakeoverWarningTests.Billing.preview] are fenced too"),
					(line) -> assertThat(line).contains("INFO")
						.contains("Group 'audit'")
						.contains("Make sure that its leader-only writes are fenced"));
	}

	@Test
	void nothingIsSaidWithoutCrashTakeover(CapturedOutput output) {
		this.runner.run((context) -> assertThat(context).hasNotFailed());
		assertThat(output.getOut()).doesNotContain("has crash takeover");
	}

	static class Reports {

		@LeaderOnly(group = "reports")
		void run() {
		}

	}

	static class Billing {

		@LeaderOnly(group = "billing", fenced = true)
		void settle() {
		}

		@LeaderOnly(group = "billing")
		void preview() {
		}

	}

}
