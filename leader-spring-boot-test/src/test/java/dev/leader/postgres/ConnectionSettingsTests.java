package dev.leader.postgres;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leader.autoconfigure.LeaderAutoConfiguration;
import dev.leader.jdbc.JdbcStoresAutoConfiguration;
import dev.leader.jdbc.LeaderSchemaMigration;
import dev.leader.jdbc.TablePrefix;
import dev.leader.lease.CoordinationStore;
import dev.leader.lease.CoordinationStore.AcquireResult;
import dev.leader.mariadb.MariaDbStoresAutoConfiguration;
import dev.leader.node.NodeRegistration;
import dev.leader.test.AbstractCoordinationStoreContractTests;
import dev.leader.test.Grants;
import dev.leader.test.TemporaryPostgres;
import dev.leader.test.TestDatabase;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The starter's own statements on pools and servers whose defaults are not the starter's:
 * auto-commit off (as with JPA), {@code REPEATABLE READ} or {@code SERIALIZABLE}
 * isolation, {@code synchronous_commit=off}, read-only connections and standbys.
 */
class ConnectionSettingsTests {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	private static final Duration TIMEOUT = Duration.ofSeconds(3);

	@Test
	void grantsAndRenewalsSurviveACrashOfADatabaseWhoseDefaultIsSynchronousCommitOff() throws Exception {
		// Without a flush forced by the commit, WAL waits up to ten seconds for the WAL
		// writer, and a crash loses it.
		try (TemporaryPostgres server = TemporaryPostgres.start("synchronous_commit = off",
				"wal_writer_delay = 10000ms", "checkpoint_timeout = 1h")) {
			HikariDataSource dataSource = pool(server.url(), "postgres", "", (config) -> {
			});
			try {
				new LeaderSchemaMigration(dataSource, PREFIX).migrate();
				PostgresCoordinationStore store = new PostgresCoordinationStore(dataSource, PREFIX, TIMEOUT);
				assertThat(Grants.acquire(store, "g", "a", Duration.ofMillis(300)).granted()).isTrue();
				awaitExpiry(dataSource);
				AcquireResult second = Grants.acquire(store, "g", "b", Duration.ofSeconds(30));
				assertThat(second.lease().term()).isEqualTo(2);
				NodeRegistration b = Grants.node("b");
				Instant renewed = store
					.tick(b, Map.of("g", 2L), List.of("g"), Duration.ofSeconds(60), Duration.ofSeconds(10))
					.renewed()
					.get("g")
					.expiresAt();
				store.disconnect();
				server.stop("immediate");
				server.startServer();
				try (Connection connection = server.connect();
						Statement statement = connection.createStatement();
						ResultSet row = statement.executeQuery(
								"SELECT holder, term, expires_at FROM leader_leases WHERE group_name = 'g'")) {
					assertThat(row.next()).as("the lease row survived the crash").isTrue();
					assertThat(row.getString(1)).isEqualTo("b");
					assertThat(row.getLong(2)).isEqualTo(2);
					assertThat(row.getObject(3, java.time.OffsetDateTime.class).toInstant()).isEqualTo(renewed);
				}
			}
			finally {
				dataSource.close();
			}
		}
	}

	@Test
	void statementsCommitOnAConnectionWithAutoCommitOffAndSerializableIsolationWhichGetsItsSettingsBack()
			throws Exception {
		TestDatabase database = TestDatabase.createSchema();
		try (HikariDataSource migrations = database.dataSource(2)) {
			new LeaderSchemaMigration(migrations, PREFIX).migrate();
		}
		// A data source without a pool of its own resets nothing, so whatever the store
		// left changed would show.
		SingleConnectionDataSource dataSource = new SingleConnectionDataSource(database.url(), database.user(),
				database.password(), true);
		dataSource.setAutoCommit(false);
		try {
			Connection connection = dataSource.getConnection();
			connection.setTransactionIsolation(Connection.TRANSACTION_SERIALIZABLE);
			PostgresCoordinationStore store = new PostgresCoordinationStore(dataSource, PREFIX, TIMEOUT);
			assertThat(Grants.acquire(store, "g", "a", Duration.ofSeconds(30)).granted()).isTrue();
			store.tick(Grants.node("a"), Map.of("g", 1L), List.of("g"), Duration.ofSeconds(30), Duration.ofSeconds(10));
			PostgresDaemonStore daemons = new PostgresDaemonStore(dataSource, PREFIX, TIMEOUT, Duration.ofSeconds(5));
			assertThat(daemons.drain("a", true)).isTrue();
			store.disconnect();
			try (Connection other = database.connect();
					Statement statement = other.createStatement();
					ResultSet row = statement.executeQuery("SELECT l.holder, n.drained FROM leader_leases l, "
							+ "leader_nodes n WHERE l.group_name = 'g' AND n.node_id = 'a'")) {
				assertThat(row.next()).as("the grant and the heartbeat were committed").isTrue();
				assertThat(row.getString(1)).isEqualTo("a");
				assertThat(row.getBoolean(2)).as("the drain was committed").isTrue();
			}
			assertThat(connection.getAutoCommit()).isFalse();
			assertThat(connection.getTransactionIsolation()).isEqualTo(Connection.TRANSACTION_SERIALIZABLE);
		}
		finally {
			dataSource.destroy();
			database.drop();
		}
	}

	@Test
	void readOnlyConnectionsFailStartupWithAMessageThatSaysSo() {
		withContext("spring.datasource.hikari.read-only=true",
				(failure) -> assertThat(failure).hasMessageContaining("its connections are read-only")
					.hasMessageContaining("spring.datasource.url"));
	}

	@Test
	void readOnlyDatabaseFailsStartupWithAMessageThatSaysSo() {
		withContext("spring.datasource.hikari.connection-init-sql=SET default_transaction_read_only = on",
				(failure) -> assertThat(failure).hasMessageContaining("default_transaction_read_only is on"));
	}

	@Test
	void standbyFailsStartupWithAMessageThatSaysSo() {
		try (TemporaryPostgres primary = TemporaryPostgres.start(); TemporaryPostgres standby = primary.standby()) {
			new ApplicationContextRunner()
				.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
						PostgresStoresAutoConfiguration.class, MariaDbStoresAutoConfiguration.class,
						JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class))
				.withPropertyValues("spring.datasource.url=" + standby.url(), "spring.datasource.username=postgres",
						"leader.node.id=test-node")
				.run((context) -> assertThat(context).hasFailed()
					.getFailure()
					.rootCause()
					.hasMessageContaining("it leads to a standby server"));
		}
	}

	private void withContext(String property, java.util.function.Consumer<Throwable> failure) {
		TestDatabase database = TestDatabase.createSchema();
		try {
			new ApplicationContextRunner()
				.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
						PostgresStoresAutoConfiguration.class, MariaDbStoresAutoConfiguration.class,
						JdbcStoresAutoConfiguration.class, LeaderAutoConfiguration.class))
				.withPropertyValues("spring.datasource.url=" + database.url(),
						"spring.datasource.username=" + database.user(),
						"spring.datasource.password=" + database.password(), "leader.node.id=test-node", property)
				.run((context) -> {
					assertThat(context).hasFailed();
					Throwable cause = context.getStartupFailure();
					while (cause.getCause() != null) {
						cause = cause.getCause();
					}
					failure.accept(cause);
				});
			try (Connection connection = database.connect();
					Statement statement = connection.createStatement();
					ResultSet row = statement.executeQuery("SELECT count(*) FROM information_schema.tables "
							+ "WHERE table_schema = '" + database.schema() + "'")) {
				row.next();
				assertThat(row.getInt(1)).as("nothing was created").isZero();
			}
			catch (SQLException ex) {
				throw new IllegalStateException(ex);
			}
		}
		finally {
			database.drop();
		}
	}

	private static void awaitExpiry(javax.sql.DataSource dataSource) {
		await().atMost(Duration.ofSeconds(5)).until(() -> {
			try (Connection connection = dataSource.getConnection();
					Statement statement = connection.createStatement();
					ResultSet row = statement.executeQuery(
							"SELECT expires_at <= clock_timestamp() FROM leader_leases WHERE group_name = 'g'")) {
				return row.next() && row.getBoolean(1);
			}
		});
	}

	private static HikariDataSource pool(String url, String user, String password, Consumer<HikariConfig> customizer) {
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(url);
		config.setUsername(user);
		config.setPassword(password);
		config.setMaximumPoolSize(12);
		config.setConnectionTimeout(3000);
		customizer.accept(config);
		return new HikariDataSource(config);
	}

	/**
	 * The coordination store's contract on a pool of the test's schema with settings of
	 * the application's own.
	 */
	abstract class OnAConfiguredPool extends AbstractCoordinationStoreContractTests {

		private final Consumer<HikariConfig> settings;

		private TestDatabase database;

		private HikariDataSource dataSource;

		OnAConfiguredPool(Consumer<HikariConfig> settings) {
			this.settings = settings;
		}

		@Override
		protected CoordinationStore createStore() {
			this.database = TestDatabase.createSchema();
			this.dataSource = pool(this.database.url(), this.database.user(), this.database.password(), this.settings);
			new LeaderSchemaMigration(this.dataSource, PREFIX).migrate();
			return new PostgresCoordinationStore(this.dataSource, PREFIX, TIMEOUT);
		}

		@Override
		protected void destroyStore(CoordinationStore store) {
			this.dataSource.close();
			this.database.drop();
		}

		@Override
		protected boolean supportsReleaseNotifications() {
			return true;
		}

	}

	/**
	 * The coordination store's contract on a pool with auto-commit off and
	 * {@code SERIALIZABLE} isolation: without the store's own settings nothing would
	 * commit, and racing nodes would fail on serialization errors.
	 */
	@Nested
	class OnAPoolWithAutoCommitOffAndSerializableIsolation extends OnAConfiguredPool {

		OnAPoolWithAutoCommitOffAndSerializableIsolation() {
			super((config) -> {
				config.setAutoCommit(false);
				config.setTransactionIsolation("TRANSACTION_SERIALIZABLE");
			});
		}

	}

	/**
	 * The same on {@code REPEATABLE READ} with auto-commit on.
	 */
	@Nested
	class OnAPoolWithRepeatableReadIsolation extends OnAConfiguredPool {

		OnAPoolWithRepeatableReadIsolation() {
			super((config) -> config.setTransactionIsolation("TRANSACTION_REPEATABLE_READ"));
		}

	}

}
