package dev.leader.jdbc;

import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;

import org.flywaydb.core.api.ResourceProvider;
import org.flywaydb.core.api.resource.LoadableResource;
import org.jspecify.annotations.Nullable;

import org.springframework.core.io.Resource;
import org.springframework.core.io.support.PathMatchingResourcePatternResolver;

/**
 * The migrations of one {@link JdbcDialect}, listed through Spring's resource resolver
 * for {@link LeaderSchemaMigration}'s Flyway. Flyway's own class-path scanner lists
 * directories of files and jars only, not the resources of a native image, which Spring's
 * resolver reads too (they are kept by {@link JdbcRuntimeHints}). Each migration is named
 * as Flyway's scanner names it, by its path under the location, so that the history of a
 * schema that an earlier version migrated still matches.
 */
final class MigrationResources implements ResourceProvider {

	private static final String CLASSPATH = "classpath:";

	private final List<Migration> migrations;

	/**
	 * Lists the migrations of a location.
	 * @param classLoader the class loader to read them with
	 * @param location the location, {@code classpath:} and a directory, for example
	 * {@code classpath:db/leader/postgresql}
	 */
	MigrationResources(ClassLoader classLoader, String location) {
		String directory = location.startsWith(CLASSPATH) ? location.substring(CLASSPATH.length()) : location;
		try {
			Resource[] found = new PathMatchingResourcePatternResolver(classLoader)
				.getResources("classpath*:" + directory + "/*");
			List<Migration> migrations = new ArrayList<>();
			for (Resource resource : found) {
				String name = resource.getFilename();
				if (name != null && resource.isReadable()) {
					migrations.add(new Migration(directory + "/" + name, name, resource));
				}
			}
			this.migrations = List.copyOf(migrations);
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not list the migrations of " + location, ex);
		}
	}

	@Override
	public @Nullable LoadableResource getResource(String name) {
		return this.migrations.stream().filter((migration) -> migration.name.equals(name)).findFirst().orElse(null);
	}

	@Override
	public Collection<LoadableResource> getResources(String prefix, String[] suffixes) {
		return this.migrations.stream()
			.filter((migration) -> migration.name.startsWith(prefix))
			.filter((migration) -> Arrays.stream(suffixes).anyMatch(migration.name::endsWith))
			.map(LoadableResource.class::cast)
			.toList();
	}

	/**
	 * One migration, read as UTF-8, Flyway's default encoding.
	 */
	private static final class Migration extends LoadableResource {

		private final String path;

		private final String name;

		private final Resource resource;

		Migration(String path, String name, Resource resource) {
			this.path = path;
			this.name = name;
			this.resource = resource;
		}

		@Override
		public Reader read() {
			try {
				return new InputStreamReader(this.resource.getInputStream(), StandardCharsets.UTF_8);
			}
			catch (IOException ex) {
				throw new UncheckedIOException("Could not read migration " + this.path, ex);
			}
		}

		@Override
		public String getAbsolutePath() {
			return this.path;
		}

		@Override
		public String getAbsolutePathOnDisk() {
			return this.path;
		}

		@Override
		public String getFilename() {
			return this.name;
		}

		@Override
		public String getRelativePath() {
			return this.name;
		}

	}

}
