package dev.leader.fencing;

import java.time.Duration;

import dev.leader.LeaderOnly;
import dev.leader.Leadership;
import dev.leader.StaleLeadershipException;
import dev.leader.autoconfigure.LeaderAutoConfiguration;
import dev.leader.jdbc.JdbcStoresAutoConfiguration;
import dev.leader.mariadb.MariaDbStoresAutoConfiguration;
import dev.leader.postgres.PostgresStoresAutoConfiguration;
import dev.leader.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.IllegalTransactionStateException;
import org.springframework.transaction.annotation.Transactional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * {@code @LeaderOnly(fenced = true)} in an application context, with Spring's own
 * transaction advice.
 */
class FencedLeaderOnlyTests {

	private TestDatabase database;

	private ApplicationContextRunner runner;

	@BeforeEach
	void createSchema() {
		this.database = TestDatabase.createSchema();
		// Long renewals, so that the node goes on believing it leads after its lease is
		// taken away below.
		this.runner = new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
					DataSourceTransactionManagerAutoConfiguration.class, TransactionAutoConfiguration.class,
					PostgresStoresAutoConfiguration.class, MariaDbStoresAutoConfiguration.class,
					JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class))
			.withPropertyValues("spring.datasource.url=" + this.database.url(),
					"spring.datasource.username=" + this.database.user(),
					"spring.datasource.password=" + this.database.password(), "leader.lease.duration=60s",
					"leader.lease.renew-interval=20s", "leader.node.expiry=60s")
			.withUserConfiguration(BatchConfiguration.class);
	}

	@AfterEach
	void dropSchema() {
		this.database.drop();
	}

	@Test
	void fencedCallOfTheLeaderCommitsItsWrites() {
		this.runner.run((context) -> {
			awaitLeadership(context.getBean(Leadership.class));
			context.getBean(Batch.class).run();
			assertThat(batches(context)).isEqualTo(1);
		});
	}

	@Test
	void fencedCallOfANodeThatStillBelievesItLeadsIsRejectedAndRolledBack() {
		this.runner.run((context) -> {
			Leadership leadership = context.getBean(Leadership.class);
			awaitLeadership(leadership);
			long term = leadership.token("billing").orElseThrow().term();
			JdbcClient.create(context.getBean(javax.sql.DataSource.class))
				.sql("UPDATE leader_leases SET holder = 'usurper', term = term + 1 WHERE group_name = 'billing'")
				.update();
			assertThat(leadership.isLeader("billing")).isTrue();
			assertThatExceptionOfType(StaleLeadershipException.class).isThrownBy(context.getBean(Batch.class)::run)
				.withMessageContaining("term " + term)
				.withMessageContaining("held by usurper");
			assertThat(batches(context)).isZero();
			assertThat(context.getBean(Fencing.class).rejections()).isEqualTo(1);
		});
	}

	@Test
	void fencedCallWithoutATransactionFailsInsteadOfRunningUnfenced() {
		this.runner.run((context) -> {
			awaitLeadership(context.getBean(Leadership.class));
			assertThatExceptionOfType(IllegalTransactionStateException.class)
				.isThrownBy(context.getBean(Batch.class)::runWithoutTransaction);
			assertThat(batches(context)).isZero();
		});
	}

	private static void awaitLeadership(Leadership leadership) throws InterruptedException {
		assertThat(leadership.awaitLeadership("billing", Duration.ofSeconds(10))).isTrue();
	}

	private static long batches(org.springframework.context.ApplicationContext context) {
		return JdbcClient.create(context.getBean(javax.sql.DataSource.class))
			.sql("SELECT count(*) FROM batches")
			.query(Long.class)
			.single();
	}

	@Configuration(proxyBeanMethods = false)
	static class BatchConfiguration {

		@Bean
		Batch batch(javax.sql.DataSource dataSource) {
			JdbcClient jdbc = JdbcClient.create(dataSource);
			jdbc.sql("CREATE TABLE batches (term BIGINT NOT NULL)").update();
			return new Batch(jdbc);
		}

	}

	public static class Batch {

		private final JdbcClient jdbc;

		Batch(JdbcClient jdbc) {
			this.jdbc = jdbc;
		}

		@LeaderOnly(group = "billing", fenced = true)
		@Transactional
		public void run() {
			insert();
		}

		@LeaderOnly(group = "billing", fenced = true)
		public void runWithoutTransaction() {
			insert();
		}

		private void insert() {
			this.jdbc.sql("INSERT INTO batches (term) VALUES (?)")
				.param(dev.leader.FencingToken.current().term())
				.update();
		}

	}

}
