package dev.leader.jdbc;

import java.util.List;
import java.util.Map;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.test.TestDatabase;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.simple.JdbcClient;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The starter's migrations, which {@link LeaderSchemaMigration} lists through Spring's
 * resource resolver ({@link MigrationResources}, for native images), against the history
 * that Flyway's own class-path scanner writes, as the starter did before: the same rows,
 * and a schema migrated the old way needs nothing more.
 */
class LeaderSchemaMigrationTests {

	private static final String HISTORY = """
			SELECT version, description, type, script, checksum FROM leader_schema_history ORDER BY installed_rank
			""";

	private final TestDatabase scannedSchema = TestDatabase.createSchema();

	private final TestDatabase listedSchema = TestDatabase.createSchema();

	private final HikariDataSource scanned = this.scannedSchema.dataSource(2);

	private final HikariDataSource listed = this.listedSchema.dataSource(2);

	@AfterEach
	void dropSchemas() {
		this.scanned.close();
		this.listed.close();
		this.scannedSchema.drop();
		this.listedSchema.drop();
	}

	@Test
	void listedMigrationsWriteTheSameHistoryAsFlywaysOwnScanner() {
		migrateWithFlywaysScanner(this.scanned);
		new LeaderSchemaMigration(this.listed, new TablePrefix("leader_")).migrate();
		List<Map<String, Object>> history = history(this.listed);
		assertThat(history).hasSizeGreaterThan(1).isEqualTo(history(this.scanned));
		assertThat(history).extracting((row) -> row.get("script"))
			.contains("V1__leases_and_nodes.sql", "V2__fences.sql");
	}

	@Test
	void schemaMigratedByFlywaysOwnScannerValidatesAndNeedsNothingMore() {
		migrateWithFlywaysScanner(this.scanned);
		List<Map<String, Object>> before = history(this.scanned);
		new LeaderSchemaMigration(this.scanned, new TablePrefix("leader_")).migrate();
		assertThat(history(this.scanned)).isEqualTo(before);
	}

	// The starter's Flyway as it was configured before it listed its migrations itself.
	private static void migrateWithFlywaysScanner(DataSource dataSource) {
		Flyway.configure()
			.dataSource(dataSource)
			.locations("classpath:db/leader/postgresql")
			.table("leader_schema_history")
			.placeholders(Map.of("prefix", "leader_"))
			.baselineOnMigrate(true)
			.baselineVersion("0")
			.load()
			.migrate();
	}

	private static List<Map<String, Object>> history(DataSource dataSource) {
		return JdbcClient.create(dataSource).sql(HISTORY).query().listOfRows();
	}

}
