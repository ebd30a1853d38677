package dev.leader.autoconfigure;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.FencingToken;
import dev.leader.LeaderDataSource;
import dev.leader.LeaderOnly;
import dev.leader.Leadership;
import dev.leader.alone.LeaderMode;
import dev.leader.jdbc.JdbcStoresAutoConfiguration;
import dev.leader.lease.CoordinationStore;
import dev.leader.mariadb.MariaDbCoordinationStore;
import dev.leader.mariadb.MariaDbStoresAutoConfiguration;
import dev.leader.postgres.PostgresStoresAutoConfiguration;
import dev.leader.test.MariaDbTestDatabase;
import dev.leader.test.TestDatabase;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Primary;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.IllegalTransactionStateException;
import org.springframework.transaction.annotation.Transactional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * A database of the application's choice: a {@link LeaderDataSource @LeaderDataSource}
 * bean gives the starter a DataSource of its own, which everything the starter does with
 * a database uses, while the application's stays untouched; an application with several
 * DataSources and neither a qualifier nor a primary fails at startup, saying which to
 * mark.
 */
@ExtendWith(OutputCaptureExtension.class)
class LeaderDataSourceTests {

	private static final Duration WAIT = Duration.ofSeconds(10);

	private TestDatabase application;

	private TestDatabase leader;

	private ApplicationContextRunner runner;

	@BeforeEach
	void createSchemas() {
		this.application = TestDatabase.createSchema();
		this.leader = TestDatabase.createSchema();
		this.runner = new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
					DataSourceTransactionManagerAutoConfiguration.class, TransactionAutoConfiguration.class,
					PostgresStoresAutoConfiguration.class, MariaDbStoresAutoConfiguration.class,
					JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class))
			.withPropertyValues("spring.datasource.url=" + this.application.url(),
					"spring.datasource.username=" + this.application.user(),
					"spring.datasource.password=" + this.application.password(), "leader.node.id=chosen-node",
					"leader.lease.duration=60s", "leader.lease.renew-interval=20s", "leader.node.expiry=60s")
			.withBean("leaderSchema", TestDatabase.class, () -> this.leader);
	}

	@AfterEach
	void dropSchemas() {
		this.application.drop();
		this.leader.drop();
	}

	@Test
	void qualifiedDataSourceKeepsTheStarterTablesWhileTheApplicationsStaysUntouched() {
		this.runner.withUserConfiguration(OwnLeaderDataSource.class).run((context) -> {
			assertThat(context).hasNotFailed();
			// Declared as a non-default candidate, the starter's DataSource leaves Spring
			// Boot's own in place for the rest of the application.
			assertThat(context.getBean(DataSource.class)).isInstanceOf(HikariDataSource.class)
				.extracting((dataSource) -> ((HikariDataSource) dataSource).getJdbcUrl())
				.isEqualTo(this.application.url());
			Leadership leadership = context.getBean(Leadership.class);
			assertThat(leadership.awaitLeadership("default", WAIT)).isTrue();
			assertThat(context.getBean(LeaderMode.class).isAlone()).isFalse();
			assertThat(tables(this.leader)).contains("leader_leases", "leader_nodes", "leader_assignments",
					"leader_fences", "leader_schema_history");
			assertThat(holder(this.leader, "default")).isEqualTo("chosen-node");
			assertThat(tables(this.application)).isEmpty();
		});
	}

	@Test
	void qualifiedDataSourceIsChosenNextToAPrimaryOne() {
		this.runner.withUserConfiguration(PrimaryAndLeaderDataSources.class).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(Leadership.class).awaitLeadership("default", WAIT)).isTrue();
			assertThat(tables(this.leader)).contains("leader_leases");
			assertThat(tables(this.application)).isEmpty();
		});
	}

	@Test
	void qualifiedDataSourceIsChosenAmongSeveralWithoutAPrimary() {
		this.runner.withUserConfiguration(TwoDataSourcesOneForTheStarter.class).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(Leadership.class).awaitLeadership("default", WAIT)).isTrue();
			assertThat(tables(this.leader)).contains("leader_leases");
			assertThat(tables(this.application)).isEmpty();
		});
	}

	@Test
	void primaryDataSourceIsChosenAmongSeveralWithoutAQualifier() {
		this.runner.withUserConfiguration(TwoDataSourcesOnePrimary.class).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(Leadership.class).awaitLeadership("default", WAIT)).isTrue();
			assertThat(tables(this.application)).contains("leader_leases");
			assertThat(tables(this.leader)).isEmpty();
		});
	}

	@Test
	void severalDataSourcesWithNeitherQualifierNorPrimaryFailStartupBeforeAnythingIsCreated() throws SQLException {
		this.runner.withUserConfiguration(TwoDataSources.class).run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context.getStartupFailure()).rootCause()
				.isInstanceOf(IllegalStateException.class)
				.satisfies((cause) -> assertThat(cause.getClass().getSimpleName())
					.isEqualTo("CoordinationDataSourceException"))
				.hasMessageContaining("but the application has 2 (orders, reports)");
		});
		assertThat(tables(this.application)).isEmpty();
		assertThat(tables(this.leader)).isEmpty();
	}

	@Test
	void severalDataSourcesWithNeitherQualifierNorPrimaryFailStartupWithAFailureAnalysis(CapturedOutput output) {
		SpringApplicationBuilder application = new SpringApplicationBuilder(TwoDataSourcesApplication.class)
			.web(WebApplicationType.NONE)
			.initializers((context) -> context.getBeanFactory().registerSingleton("leaderSchema", this.leader));
		assertThatExceptionOfType(RuntimeException.class)
			.isThrownBy(() -> application.run("--spring.datasource.url=" + this.application.url(),
					"--spring.datasource.username=" + this.application.user()));
		assertThat(output).contains("APPLICATION FAILED TO START")
			.contains("Description:")
			.contains("leader-spring-boot-starter needs one DataSource to keep its tables in, but the application "
					+ "has 2 and none is marked @LeaderDataSource or @Primary:")
			.contains("- orders: defined by method 'orders' in")
			.contains("- reports: defined by method 'reports' in")
			.contains("Action:")
			.contains("Annotate the DataSource the starter should use with @dev.leader.LeaderDataSource")
			.contains("or mark the application's main DataSource @Primary")
			.doesNotContain("CoordinationDataSourceException:");
	}

	@Test
	void disabledStarterNeedsNoChoiceAmongSeveralDataSources() {
		this.runner.withUserConfiguration(TwoDataSources.class)
			.withPropertyValues("leader.enabled=false")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context.getBean(LeaderMode.class).reason()).isEqualTo("leader.enabled=false");
				assertThat(context.getBean(Leadership.class).isLeader("default")).isTrue();
			});
	}

	@Test
	void fencedCallInATransactionOnTheStartersDataSourceCommitsItsWrites() {
		this.runner.withUserConfiguration(OwnLeaderDataSource.class, Settlements.class).run((context) -> {
			assertThat(context.getBean(Leadership.class).awaitLeadership("billing", WAIT)).isTrue();
			FencingToken token = context.getBean(Settlement.class).settle();
			assertThat(token.group()).isEqualTo("billing");
			assertThat(JdbcClient.create(this.leader.unpooled())
				.sql("SELECT term FROM settlements")
				.query(Long.class)
				.list()).containsExactly(token.term());
		});
	}

	@Test
	void fencedCallInATransactionOnAnotherDataSourceFailsInsteadOfWritingUnfenced() {
		this.runner.withUserConfiguration(OwnLeaderDataSource.class, Settlements.class).run((context) -> {
			assertThat(context.getBean(Leadership.class).awaitLeadership("billing", WAIT)).isTrue();
			assertThatExceptionOfType(IllegalTransactionStateException.class)
				.isThrownBy(context.getBean(Settlement.class)::settleInTheApplicationsTransaction)
				.withMessageContaining("on the DataSource that the starter keeps its leases in")
				.withMessageContaining("A transaction is active on this thread, but not on that DataSource");
			assertThat(JdbcClient.create(this.application.unpooled())
				.sql("SELECT count(*) FROM orders")
				.query(Long.class)
				.single()).isZero();
		});
	}

	@Test
	void singleNodeModeIsDecidedOnTheQualifiedDataSource() {
		this.runner.withUserConfiguration(InMemoryLeaderDataSource.class).run((context) -> {
			assertThat(context).hasNotFailed();
			LeaderMode mode = context.getBean(LeaderMode.class);
			assertThat(mode.isAlone()).isTrue();
			assertThat(mode.reason()).startsWith("the DataSource is an in-memory H2 database");
			assertThat(context.getBean(Leadership.class).isLeader("default")).isTrue();
			assertThat(tables(this.application)).isEmpty();
		});
	}

	@Test
	void qualifiedServerDataSourceCoordinatesWhileTheApplicationRunsOnAnInMemoryDatabase() {
		this.runner.withUserConfiguration(OwnLeaderDataSource.class)
			.withPropertyValues("spring.datasource.url=jdbc:h2:mem:" + UUID.randomUUID(),
					"spring.datasource.username=sa", "spring.datasource.password=")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context.getBean(LeaderMode.class).isAlone()).isFalse();
				assertThat(context.getBean(Leadership.class).awaitLeadership("default", WAIT)).isTrue();
				assertThat(holder(this.leader, "default")).isEqualTo("chosen-node");
			});
	}

	@Test
	void storesAndMigrationsFollowTheDatabaseOfTheQualifiedDataSource() {
		MariaDbTestDatabase mariaDb = MariaDbTestDatabase.create();
		try {
			this.runner.withBean("mariaDb", MariaDbTestDatabase.class, () -> mariaDb)
				.withUserConfiguration(MariaDbLeaderDataSource.class)
				.run((context) -> {
					assertThat(context).hasNotFailed();
					assertThat(context.getBean(CoordinationStore.class)).isInstanceOf(MariaDbCoordinationStore.class);
					assertThat(context.getBean(Leadership.class).awaitLeadership("default", WAIT)).isTrue();
					assertThat(JdbcClient.create(context.getBean("leaderDataSource", DataSource.class))
						.sql("SELECT holder FROM leader_leases WHERE group_name = 'default'")
						.query(String.class)
						.single()).isEqualTo("chosen-node");
					assertThat(tables(this.application)).isEmpty();
				});
		}
		finally {
			mariaDb.drop();
		}
	}

	private static Set<String> tables(TestDatabase database) throws SQLException {
		Set<String> tables = new TreeSet<>();
		try (Connection connection = database.connect();
				PreparedStatement statement = connection
					.prepareStatement("SELECT table_name FROM information_schema.tables WHERE table_schema = ?")) {
			statement.setString(1, database.schema());
			try (ResultSet rows = statement.executeQuery()) {
				while (rows.next()) {
					tables.add(rows.getString(1));
				}
			}
		}
		return tables;
	}

	private static @Nullable String holder(TestDatabase database, String group) {
		return JdbcClient.create(database.unpooled())
			.sql("SELECT holder FROM leader_leases WHERE group_name = ?")
			.param(group)
			.query(String.class)
			.optional()
			.orElse(null);
	}

	private static DataSource pool(TestDatabase database) {
		return database.dataSource(4);
	}

	@Configuration(proxyBeanMethods = false)
	static class OwnLeaderDataSource {

		@Bean(defaultCandidate = false, destroyMethod = "close")
		@LeaderDataSource
		HikariDataSource leaderDataSource(TestDatabase leaderSchema) {
			return leaderSchema.dataSource(4);
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class MariaDbLeaderDataSource {

		@Bean(defaultCandidate = false)
		@LeaderDataSource
		HikariDataSource leaderDataSource(MariaDbTestDatabase mariaDb) {
			return mariaDb.dataSource(4);
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class InMemoryLeaderDataSource {

		@Bean(defaultCandidate = false)
		@LeaderDataSource
		DataSource leaderDataSource() {
			HikariDataSource dataSource = new HikariDataSource();
			dataSource.setJdbcUrl("jdbc:h2:mem:" + UUID.randomUUID());
			dataSource.setUsername("sa");
			return dataSource;
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class PrimaryAndLeaderDataSources {

		@Bean
		@Primary
		DataSource orders(org.springframework.core.env.Environment environment) {
			HikariDataSource dataSource = new HikariDataSource();
			dataSource.setJdbcUrl(environment.getRequiredProperty("spring.datasource.url"));
			dataSource.setUsername(environment.getProperty("spring.datasource.username"));
			dataSource.setPassword(environment.getProperty("spring.datasource.password"));
			return dataSource;
		}

		@Bean
		@LeaderDataSource
		DataSource coordination(TestDatabase leaderSchema) {
			return pool(leaderSchema);
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class TwoDataSources {

		@Bean
		DataSource orders(TestDatabase leaderSchema) {
			return leaderSchema.unpooled();
		}

		@Bean
		DataSource reports(TestDatabase leaderSchema) {
			return leaderSchema.unpooled();
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class TwoDataSourcesOneForTheStarter {

		@Bean
		DataSource orders(org.springframework.core.env.Environment environment) {
			HikariDataSource dataSource = new HikariDataSource();
			dataSource.setJdbcUrl(environment.getRequiredProperty("spring.datasource.url"));
			dataSource.setUsername(environment.getProperty("spring.datasource.username"));
			return dataSource;
		}

		@Bean
		DataSource reports(org.springframework.core.env.Environment environment) {
			return orders(environment);
		}

		@Bean
		@LeaderDataSource
		DataSource coordination(TestDatabase leaderSchema) {
			return pool(leaderSchema);
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class TwoDataSourcesOnePrimary {

		@Bean
		@Primary
		DataSource orders(org.springframework.core.env.Environment environment) {
			HikariDataSource dataSource = new HikariDataSource();
			dataSource.setJdbcUrl(environment.getRequiredProperty("spring.datasource.url"));
			dataSource.setUsername(environment.getProperty("spring.datasource.username"));
			return dataSource;
		}

		@Bean
		DataSource reports(TestDatabase leaderSchema) {
			return pool(leaderSchema);
		}

	}

	@SpringBootConfiguration(proxyBeanMethods = false)
	@ImportAutoConfiguration({ DataSourceAutoConfiguration.class, PostgresStoresAutoConfiguration.class,
			MariaDbStoresAutoConfiguration.class, JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class })
	static class TwoDataSourcesApplication extends TwoDataSources {

	}

	@Configuration(proxyBeanMethods = false)
	static class Settlements {

		@Bean(defaultCandidate = false)
		DataSourceTransactionManager leaderTransactionManager(@LeaderDataSource DataSource dataSource) {
			return new DataSourceTransactionManager(dataSource);
		}

		@Bean
		Settlement settlement(@LeaderDataSource DataSource leaderDataSource, DataSource applicationDataSource) {
			JdbcClient.create(leaderDataSource).sql("CREATE TABLE settlements (term BIGINT NOT NULL)").update();
			JdbcClient.create(applicationDataSource).sql("CREATE TABLE orders (term BIGINT NOT NULL)").update();
			return new Settlement(JdbcClient.create(leaderDataSource), JdbcClient.create(applicationDataSource));
		}

	}

	public static class Settlement {

		private final JdbcClient leader;

		private final JdbcClient application;

		Settlement(JdbcClient leader, JdbcClient application) {
			this.leader = leader;
			this.application = application;
		}

		@LeaderOnly(group = "billing", fenced = true)
		@Transactional("leaderTransactionManager")
		public FencingToken settle() {
			FencingToken token = FencingToken.current();
			this.leader.sql("INSERT INTO settlements (term) VALUES (?)").param(token.term()).update();
			return token;
		}

		@LeaderOnly(group = "billing", fenced = true)
		@Transactional
		public void settleInTheApplicationsTransaction() {
			this.application.sql("INSERT INTO orders (term) VALUES (?)").param(FencingToken.current().term()).update();
		}

	}

}
