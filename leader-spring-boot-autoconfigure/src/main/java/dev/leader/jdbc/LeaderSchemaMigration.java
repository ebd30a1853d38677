package dev.leader.jdbc;

import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

import javax.sql.DataSource;

import org.flywaydb.core.Flyway;

/**
 * Creates and upgrades the starter's tables with its own Flyway migrations from
 * {@code classpath:db/leader/postgresql}, or {@code classpath:db/leader/mariadb} on
 * MariaDB (see {@link JdbcDialect}), after the {@link JdbcStoreFamily} of the database
 * checked that it is a writable primary, recorded in their own history table
 * {@code <prefix>schema_history}, so that they never mix with the application's
 * migrations.
 * <p>
 * Run by the auto-configuration at startup, after it checked the settings, unless
 * {@code leader.jdbc.migrate} is {@code false}. Public for the test kit and for nodes
 * built without a Spring context.
 */
public final class LeaderSchemaMigration {

	private final Supplier<DataSource> dataSource;

	private final TablePrefix prefix;

	private final Supplier<? extends List<? extends JdbcStoreFamily>> families;

	/**
	 * Creates a migration.
	 * @param dataSource the data source
	 * @param prefix the table prefix
	 */
	public LeaderSchemaMigration(DataSource dataSource, TablePrefix prefix) {
		this(() -> dataSource, prefix);
	}

	/**
	 * Creates a migration whose data source is found only when it runs, so that a node
	 * that keeps no table needs none.
	 * @param dataSource supplies the data source
	 * @param prefix the table prefix
	 */
	public LeaderSchemaMigration(Supplier<DataSource> dataSource, TablePrefix prefix) {
		this(dataSource, prefix, () -> JdbcStoreFamilies.listed(LeaderSchemaMigration.class.getClassLoader()));
	}

	/**
	 * Creates a migration whose data source is found only when it runs, and that checks
	 * the database with the {@link JdbcStoreFamily} of its dialect among the given ones.
	 * @param dataSource supplies the data source
	 * @param prefix the table prefix
	 * @param families supplies the store families, in order
	 */
	public LeaderSchemaMigration(Supplier<DataSource> dataSource, TablePrefix prefix,
			Supplier<? extends List<? extends JdbcStoreFamily>> families) {
		this.dataSource = dataSource;
		this.prefix = prefix;
		this.families = families;
	}

	/**
	 * Applies pending migrations, after checking that the data source leads to a writable
	 * primary.
	 * @throws IllegalStateException if its connections are read-only, or lead to a
	 * standby or a read-only database, or if the database is not one the starter supports
	 */
	public void migrate() {
		DataSource dataSource = this.dataSource.get();
		JdbcDialect dialect = JdbcDialect.of(dataSource);
		JdbcStoreFamilies.of(dialect, this.families.get()).requireWritablePrimary(dataSource);
		ClassLoader classLoader = LeaderSchemaMigration.class.getClassLoader();
		Flyway.configure(classLoader)
			.dataSource(dataSource)
			.locations(dialect.migrations())
			// Listed by Spring rather than Flyway, which cannot list them in a native
			// image.
			.resourceProvider(new MigrationResources(classLoader, dialect.migrations()))
			.table(this.prefix.value() + "schema_history")
			.placeholders(Map.of("prefix", this.prefix.value()))
			// The application's schema usually holds tables already; ours start from
			// nothing.
			.baselineOnMigrate(true)
			.baselineVersion("0")
			.load()
			.migrate();
	}

}
