package dev.leader.autoconfigure;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.LocalDateTime;

import javax.sql.DataSource;

import dev.leader.FencingToken;
import dev.leader.Leadership;
import dev.leader.fencing.Fencing;
import dev.leader.jdbc.JdbcStoresAutoConfiguration;
import dev.leader.lease.CoordinationStore;
import dev.leader.log.Bookmark;
import dev.leader.log.DecisionLog;
import dev.leader.log.LogApplier;
import dev.leader.log.LogEntry;
import dev.leader.log.RecordingApplier;
import dev.leader.mariadb.MariaDbCoordinationStore;
import dev.leader.mariadb.MariaDbStoresAutoConfiguration;
import dev.leader.postgres.PostgresStoresAutoConfiguration;
import dev.leader.test.ConnectorJ;
import dev.leader.test.MariaDbTestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An application that reaches MariaDB through MySQL's driver (Connector/J,
 * {@code com.mysql:mysql-connector-j}, a {@code jdbc:mysql:} URL), as applications with a
 * MySQL profile do: the starter tells MariaDB from the version the driver reports, builds
 * the MariaDB stores, and the node leads, fences and appends. The issue that asked for
 * it: every heartbeat failed ("Can't call rollback when autocommit=true") and no node was
 * ever elected.
 */
class MariaDbConnectorJTests {

	private static MariaDbTestDatabase database;

	@BeforeAll
	static void createDatabase() {
		database = MariaDbTestDatabase.create();
	}

	@AfterAll
	static void dropDatabase() {
		if (database != null) {
			database.drop();
		}
	}

	private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
				PostgresStoresAutoConfiguration.class, MariaDbStoresAutoConfiguration.class,
				JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class))
		.withPropertyValues("spring.datasource.url=" + ConnectorJ.url(database.url()),
				"spring.datasource.username=" + database.user(), "spring.datasource.password=" + database.password(),
				"leader.node.id=connector-j-node", "leader.groups=billing");

	@Test
	void applicationOnMariaDbThroughMySqlsDriverLeadsFencesAndAppends() {
		RecordingApplier billing = new RecordingApplier("billing");
		this.contextRunner.withBean(LogApplier.class, () -> billing).run((context) -> {
			assertThat(context).hasNotFailed();
			DataSource dataSource = context.getBean(DataSource.class);
			try (Connection connection = dataSource.getConnection()) {
				assertThat(connection.getMetaData().getDriverName()).isEqualTo("MySQL Connector/J");
			}
			assertThat(context.getBean(CoordinationStore.class)).isInstanceOf(MariaDbCoordinationStore.class);
			Leadership leadership = context.getBean(Leadership.class);
			assertThat(leadership.awaitLeadership("billing", Duration.ofSeconds(10))).isTrue();
			FencingToken token = leadership.token("billing").orElseThrow();
			assertThat(token.term()).isOne();
			Fencing fencing = context.getBean(Fencing.class);
			JdbcClient jdbc = JdbcClient.create(dataSource);
			jdbc.sql("CREATE TABLE IF NOT EXISTS fenced_writes (term BIGINT NOT NULL)").update();
			new TransactionTemplate(new DataSourceTransactionManager(dataSource)).executeWithoutResult((tx) -> {
				fencing.guard(token);
				jdbc.sql("INSERT INTO fenced_writes (term) VALUES (?)").param(token.term()).update();
			});
			assertThat(jdbc.sql("SELECT term FROM fenced_writes").query(Long.class).list()).containsExactly(1L);
			DecisionLog log = context.getBean(DecisionLog.class);
			Bookmark entry = log.append(token, "rate", "EUR 1");
			assertThat(log.awaitApplied(entry, Duration.ofSeconds(10))).isTrue();
			assertThat(billing.entries()).extracting(LogEntry::payload).containsExactly("EUR 1");
			// Still the first term: every renewal went through.
			assertThat(leadership.token("billing")).hasValueSatisfying((held) -> assertThat(held.term()).isOne());
		});
	}

	/**
	 * Why the MariaDB stores bind their times as text through any driver but MariaDB's:
	 * MariaDB's handshake announces MySQL {@code 5.5.5}, which Connector/J takes for a
	 * server without fractions of a second, so it sends a {@code LocalDateTime} cut to
	 * the second. Bound so, the time of a grant would end the lease up to a second before
	 * its holder counts. If a version of Connector/J keeps the fraction, this test fails,
	 * and the text binding may go.
	 */
	@Test
	void mySqlsDriverSendsALocalDateTimeToMariaDbCutToTheSecond() throws Exception {
		LocalDateTime time = LocalDateTime.of(2026, 1, 1, 10, 0, 0, 900_000_000);
		try (Connection connection = DriverManager.getConnection(ConnectorJ.url(database.url()), database.user(),
				database.password());
				PreparedStatement statement = connection.prepareStatement("SELECT CAST(? AS DATETIME(6)) AS sent")) {
			statement.setObject(1, time);
			try (ResultSet rows = statement.executeQuery()) {
				rows.next();
				assertThat(rows.getObject("sent", LocalDateTime.class)).isEqualTo(time.withNano(0));
			}
		}
	}

}
