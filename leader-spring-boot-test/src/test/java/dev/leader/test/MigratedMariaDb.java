package dev.leader.test;

import java.util.function.Consumer;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leader.jdbc.LeaderSchemaMigration;
import dev.leader.jdbc.TablePrefix;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A fresh {@link MariaDbTestDatabase} for one test class, migrated with the starter's
 * tables (prefix {@code leader_}), and a pool on it. Registered with
 * {@code @RegisterExtension} on a static field, it creates the database before the
 * class's own {@code @BeforeAll} methods, empties its tables before each test, before the
 * class's own {@code @BeforeEach} methods, and closes the pool and drops the database
 * after the class's own {@code @AfterAll} methods.
 */
public final class MigratedMariaDb implements BeforeAllCallback, BeforeEachCallback, AfterAllCallback {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	private final int poolSize;

	private final Consumer<HikariConfig> settings;

	private @Nullable MariaDbTestDatabase database;

	private @Nullable HikariDataSource dataSource;

	/**
	 * Creates the extension.
	 * @param poolSize the size of the pool on the database
	 */
	public MigratedMariaDb(int poolSize) {
		this(poolSize, (config) -> {
		});
	}

	/**
	 * Creates the extension, with a pool whose settings differ from the driver's
	 * defaults.
	 * @param poolSize the size of the pool on the database
	 * @param settings what the test changes on the pool's configuration
	 */
	public MigratedMariaDb(int poolSize, Consumer<HikariConfig> settings) {
		this.poolSize = poolSize;
		this.settings = settings;
	}

	/**
	 * Returns the database of the running test class.
	 * @return the database
	 */
	public MariaDbTestDatabase database() {
		return duringTheTests(this.database);
	}

	/**
	 * Returns the pool on the database of the running test class.
	 * @return the pool
	 */
	public HikariDataSource dataSource() {
		return duringTheTests(this.dataSource);
	}

	@Override
	public void beforeAll(ExtensionContext context) {
		this.database = MariaDbTestDatabase.create();
		this.dataSource = this.database.dataSource(this.poolSize, this.settings);
		new LeaderSchemaMigration(this.dataSource, PREFIX).migrate();
	}

	@Override
	public void beforeEach(ExtensionContext context) {
		database().clear();
	}

	@Override
	public void afterAll(ExtensionContext context) {
		if (this.dataSource != null) {
			this.dataSource.close();
			this.dataSource = null;
		}
		if (this.database != null) {
			this.database.drop();
			this.database = null;
		}
	}

	private static <T> T duringTheTests(@Nullable T value) {
		if (value == null) {
			throw new IllegalStateException("No MariaDB database outside the tests of a class");
		}
		return value;
	}

}
