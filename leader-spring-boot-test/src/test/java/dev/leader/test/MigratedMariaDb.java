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
 * after the class's own {@code @AfterAll} methods. Its {@code @Nested} classes share the
 * database.
 */
public final class MigratedMariaDb implements BeforeAllCallback, BeforeEachCallback, AfterAllCallback {

	private static final TablePrefix PREFIX = new TablePrefix("leader_");

	private final int poolSize;

	private final Consumer<HikariConfig> settings;

	private @Nullable Opened opened;

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
		return opened().database();
	}

	/**
	 * Returns the pool on the database of the running test class.
	 * @return the pool
	 */
	public HikariDataSource dataSource() {
		return opened().dataSource();
	}

	/**
	 * Tells whether a group's lease has expired by the database clock.
	 * @param group the group, whose lease row must exist
	 * @return whether its expiry has passed
	 */
	public boolean leaseExpired(String group) {
		return MigratedSchema.leaseExpired(dataSource(), "UTC_TIMESTAMP(6)", group);
	}

	@Override
	public void beforeAll(ExtensionContext context) {
		if (this.opened != null) {
			return;
		}
		MariaDbTestDatabase database = MariaDbTestDatabase.create();
		try {
			this.opened = new Opened(context.getUniqueId(), database,
					database.dataSource(this.poolSize, this.settings));
		}
		catch (RuntimeException ex) {
			database.drop();
			throw ex;
		}
		new LeaderSchemaMigration(this.opened.dataSource(), PREFIX).migrate();
	}

	@Override
	public void beforeEach(ExtensionContext context) {
		database().clear();
	}

	@Override
	public void afterAll(ExtensionContext context) {
		Opened opened = this.opened;
		if (opened == null || !opened.owner().equals(context.getUniqueId())) {
			return;
		}
		this.opened = null;
		try {
			opened.dataSource().close();
		}
		finally {
			opened.database().drop();
		}
	}

	private Opened opened() {
		if (this.opened == null) {
			throw new IllegalStateException("No MariaDB database outside the tests of a class");
		}
		return this.opened;
	}

	// Owned by the class that registers the extension: its @Nested classes inherit the
	// extension, and run their tests on the same database.
	private record Opened(String owner, MariaDbTestDatabase database, HikariDataSource dataSource) {

	}

}
