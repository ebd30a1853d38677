package dev.leader.postgres;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leader.FencingToken;
import dev.leader.jdbc.LeaderSchemaMigration;
import dev.leader.jdbc.TablePrefix;
import dev.leader.log.LogStore.Appended;
import dev.leader.test.Grants;
import dev.leader.test.TemporaryPostgres;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.jdbc.support.JdbcTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * Appends, assignments and acknowledgements on a primary whose commits wait for a
 * synchronous standby that does not answer ({@code synchronous_standby_names} names a
 * standby that is not there): PostgreSQL commits on the primary alone when the wait is
 * cancelled, with a warning, and the statement that committed so must fail, as a grant
 * does, rather than hand out a bookmark or a generation that a failover to the standby
 * would lose. The lease is granted before the standby is named, while commits do not
 * wait.
 */
class SynchronousStandbyCutOffTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	private static final Duration QUERY_TIMEOUT = Duration.ofSeconds(1);

	private TemporaryPostgres server;

	private HikariDataSource dataSource;

	private PostgresCoordinationStore leases;

	private FencingToken token;

	@BeforeEach
	void grantALeaseThenNameAStandbyThatDoesNotAnswer() throws SQLException {
		this.server = TemporaryPostgres.start();
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(this.server.url());
		config.setUsername("postgres");
		config.setMaximumPoolSize(4);
		this.dataSource = new HikariDataSource(config);
		new LeaderSchemaMigration(this.dataSource, PREFIX).migrate();
		this.leases = new PostgresCoordinationStore(this.dataSource, PREFIX, QUERY_TIMEOUT);
		this.token = new FencingToken("g", Grants.acquire(this.leases, "g", "a", Duration.ofMinutes(5)).lease().term());
		nameStandby("nobody");
	}

	@AfterEach
	void stopTheServer() throws SQLException {
		try {
			nameStandby("");
			this.leases.disconnect();
			this.dataSource.close();
		}
		finally {
			this.server.close();
		}
	}

	@Test
	void appendOnItsOwnConnectionWhoseWaitForTheStandbyIsCancelledFailsThoughThePrimaryCommittedIt() {
		PostgresLogStore log = new PostgresLogStore(this.dataSource, PREFIX, QUERY_TIMEOUT, Duration.ofSeconds(10),
				null);
		// The query timeout cancels the commit's wait after a second.
		assertThatExceptionOfType(DataAccessException.class).isThrownBy(() -> log.append(this.token, "a", "set", "x"))
			.withStackTraceContaining("canceling wait for synchronous replication");
		assertThat(entries()).as("the entry, committed on the primary alone").isEqualTo(1);
	}

	@Test
	void appendInTheCallersTransactionWhoseCommitWaitIsCancelledFailsTheCallersCommit() throws Exception {
		PostgresLogStore log = new PostgresLogStore(this.dataSource, PREFIX, QUERY_TIMEOUT, Duration.ofSeconds(10),
				null);
		TransactionTemplate transactions = new TransactionTemplate(new JdbcTransactionManager(this.dataSource));
		CompletableFuture<Appended> appending = CompletableFuture
			.supplyAsync(() -> transactions.execute((status) -> log.append(this.token, "a", "set", "x")));
		// No timeout applies to the caller's COMMIT, which waits for the standby until
		// the standby answers or someone cancels the wait, here an operator.
		long cancelled = await("the caller's commit to wait for the standby").atMost(Duration.ofSeconds(20))
			.until(() -> query("SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity "
					+ "WHERE wait_event = 'SyncRep' AND query = 'COMMIT'"), (count) -> count > 0);
		assertThat(cancelled).isEqualTo(1);
		assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> appending.get(20, TimeUnit.SECONDS))
			.withCauseInstanceOf(DataAccessException.class)
			.withStackTraceContaining("canceling wait for synchronous replication")
			.withStackTraceContaining("g");
		assertThat(entries()).as("the entry, committed on the primary alone").isEqualTo(1);
	}

	@Test
	void assignmentWhoseWaitForTheStandbyIsCancelledFailsThoughThePrimaryCommittedIt() {
		PostgresDaemonStore daemons = new PostgresDaemonStore(this.dataSource, PREFIX, QUERY_TIMEOUT,
				Duration.ofSeconds(10));
		assertThatExceptionOfType(DataAccessException.class)
			.isThrownBy(() -> daemons.assign(this.token, "a", "outbox", "a", 0, null))
			.withStackTraceContaining("canceling wait for synchronous replication");
		assertThat(JdbcClient.create(this.dataSource)
			.sql("SELECT count(*) FROM leader_assignments")
			.query(Long.class)
			.single()).as("the assignment, committed on the primary alone").isEqualTo(1);
	}

	@Test
	void acknowledgementWhoseWaitForTheStandbyIsCancelledFailsSoTheNodeNeverStartsTheAgent() throws SQLException {
		PostgresDaemonStore daemons = new PostgresDaemonStore(this.dataSource, PREFIX, QUERY_TIMEOUT,
				Duration.ofSeconds(10));
		nameStandby("");
		long generation = daemons.assign(this.token, "a", "outbox", "b", 0, null);
		nameStandby("nobody");
		assertThatExceptionOfType(DataAccessException.class)
			.isThrownBy(() -> daemons.acknowledge("b", "outbox", generation))
			.withStackTraceContaining("canceling wait for synchronous replication");
	}

	private long entries() {
		return JdbcClient.create(this.dataSource)
			.sql("SELECT count(*) FROM leader_log_entries")
			.query(Long.class)
			.single();
	}

	private long query(String sql) throws SQLException {
		try (Connection connection = this.server.connect();
				Statement statement = connection.createStatement();
				ResultSet row = statement.executeQuery(sql)) {
			row.next();
			return row.getLong(1);
		}
	}

	private void nameStandby(String name) throws SQLException {
		try (Connection connection = this.server.connect(); Statement statement = connection.createStatement()) {
			statement.execute("ALTER SYSTEM SET synchronous_standby_names = '" + name + "'");
			statement.execute("SELECT pg_reload_conf()");
		}
		await("the server to reload its settings").atMost(Duration.ofSeconds(10))
			.until(() -> query(
					"SELECT count(*) FROM pg_settings WHERE name = 'synchronous_standby_names' AND setting = '" + name
							+ "'") == 1);
	}

}
