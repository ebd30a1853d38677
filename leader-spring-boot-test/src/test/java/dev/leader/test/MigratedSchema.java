package dev.leader.test;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.jdbc.LeaderSchemaMigration;
import dev.leader.jdbc.TablePrefix;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import org.springframework.jdbc.core.simple.JdbcClient;

/**
 * A fresh schema of the {@link TestDatabase}, migrated with the starter's tables (prefix
 * {@code leader_}), and a pool on it. Registered with {@code @RegisterExtension}, it is
 * created before each test, before the class's own {@code @BeforeEach} methods, and
 * dropped after the class's own {@code @AfterEach} methods; a suite with hooks of its own
 * calls {@link #create()} and {@link #drop()} instead.
 */
public final class MigratedSchema implements BeforeEachCallback, AfterEachCallback {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	private final int poolSize;

	private @Nullable TestDatabase database;

	private @Nullable HikariDataSource dataSource;

	/**
	 * Creates the extension.
	 * @param poolSize the size of the pool on the schema
	 */
	public MigratedSchema(int poolSize) {
		this.poolSize = poolSize;
	}

	/**
	 * Creates and migrates the schema, and opens the pool on it.
	 * @return the pool
	 */
	public HikariDataSource create() {
		this.database = TestDatabase.createSchema();
		this.dataSource = this.database.dataSource(this.poolSize);
		new LeaderSchemaMigration(this.dataSource, PREFIX).migrate();
		return this.dataSource;
	}

	/**
	 * Closes the pool and drops the schema.
	 */
	public void drop() {
		if (this.dataSource != null) {
			this.dataSource.close();
			this.dataSource = null;
		}
		if (this.database != null) {
			this.database.drop();
			this.database = null;
		}
	}

	/**
	 * Returns the schema of the running test.
	 * @return the schema
	 */
	public TestDatabase database() {
		return duringATest(this.database);
	}

	/**
	 * Returns the pool on the schema of the running test.
	 * @return the pool
	 */
	public HikariDataSource dataSource() {
		return duringATest(this.dataSource);
	}

	/**
	 * Tells whether a group's lease has expired by the database clock.
	 * @param group the group, whose lease row must exist
	 * @return whether its expiry has passed
	 */
	public boolean leaseExpired(String group) {
		return leaseExpired(dataSource(), "clock_timestamp()", group);
	}

	/**
	 * Tells whether a group's lease has expired by the database clock, on any of the
	 * starter's databases.
	 * @param dataSource the pool on the migrated database
	 * @param clock the database's expression for the current time, in the time zone of
	 * the lease rows
	 * @param group the group, whose lease row must exist
	 * @return whether its expiry has passed
	 */
	static boolean leaseExpired(DataSource dataSource, String clock, String group) {
		return JdbcClient.create(dataSource)
			.sql("SELECT expires_at <= " + clock + " FROM leader_leases WHERE group_name = ?")
			.param(group)
			.query(Boolean.class)
			.single();
	}

	@Override
	public void beforeEach(ExtensionContext context) {
		create();
	}

	@Override
	public void afterEach(ExtensionContext context) {
		drop();
	}

	private static <T> T duringATest(@Nullable T value) {
		if (value == null) {
			throw new IllegalStateException("No schema outside a test");
		}
		return value;
	}

}
