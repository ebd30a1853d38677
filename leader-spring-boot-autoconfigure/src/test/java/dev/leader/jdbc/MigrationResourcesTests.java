package dev.leader.jdbc;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import org.flywaydb.core.api.resource.LoadableResource;
import org.junit.jupiter.api.Test;

import org.springframework.util.FileCopyUtils;

import static org.assertj.core.api.Assertions.assertThat;

class MigrationResourcesTests {

	private static final Path SOURCES = Path.of("src/main/resources/db/leader");

	@Test
	void everyMigrationOfTheDialectIsListedByItsPathUnderTheLocation() throws IOException {
		for (String dialect : new String[] { "postgresql", "mariadb" }) {
			MigrationResources resources = new MigrationResources(getClass().getClassLoader(),
					"classpath:db/leader/" + dialect);
			assertThat(resources.getResources("V", new String[] { ".sql" }))
				.extracting(LoadableResource::getRelativePath)
				.containsExactlyInAnyOrderElementsOf(fileNames(SOURCES.resolve(dialect)))
				.isNotEmpty();
			assertThat(resources.getResources("", new String[] { ".sql" }))
				.extracting(LoadableResource::getAbsolutePath)
				.allMatch((path) -> path.startsWith("db/leader/" + dialect + "/V"));
		}
	}

	@Test
	void onlyTheMigrationsWithThePrefixAndSuffixFlywayAsksForAreOffered() {
		MigrationResources resources = new MigrationResources(getClass().getClassLoader(),
				"classpath:db/leader/postgresql");
		assertThat(resources.getResources("R", new String[] { ".sql" })).isEmpty();
		assertThat(resources.getResources("V", new String[] { ".java" })).isEmpty();
		assertThat(resources.getResource("V1__leases_and_nodes.sql")).isNotNull();
		assertThat(resources.getResource("V1__leader_tables.sql")).isNull();
	}

	@Test
	void aMigrationReadsAsItsFile() throws IOException {
		LoadableResource migration = new MigrationResources(getClass().getClassLoader(),
				"classpath:db/leader/postgresql")
			.getResource("V2__fences.sql");
		assertThat(migration).isNotNull();
		try (Reader reader = migration.read()) {
			assertThat(FileCopyUtils.copyToString(reader))
				.isEqualTo(Files.readString(SOURCES.resolve("postgresql/V2__fences.sql")));
		}
	}

	private static List<String> fileNames(Path directory) throws IOException {
		try (Stream<Path> files = Files.list(directory)) {
			return files.map((file) -> file.getFileName().toString()).toList();
		}
	}

}
