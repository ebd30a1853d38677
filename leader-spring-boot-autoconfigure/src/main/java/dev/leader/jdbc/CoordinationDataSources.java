package dev.leader.jdbc;

import java.util.List;

import javax.sql.DataSource;

import dev.leader.LeaderDataSource;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.BeanWrapper;
import org.springframework.beans.PropertyAccessorFactory;
import org.springframework.beans.factory.BeanFactoryUtils;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.jdbc.autoconfigure.DataSourceProperties;
import org.springframework.jdbc.datasource.embedded.EmbeddedDatabase;

/**
 * Chooses the {@link DataSource} the starter keeps its tables in, as Spring Boot's Flyway
 * and Quartz support choose theirs: the {@link LeaderDataSource @LeaderDataSource} bean,
 * else the application's only or primary one. With several and neither, it fails with a
 * {@link CoordinationDataSourceException}, which the
 * {@link CoordinationDataSourceFailureAnalyzer} describes, rather than leave the
 * application without leadership.
 */
final class CoordinationDataSources {

	private CoordinationDataSources() {
	}

	static CoordinationDataSource choose(@Nullable DataSource qualified, ObjectProvider<DataSource> dataSources,
			@Nullable DataSourceProperties properties, ListableBeanFactory beanFactory) {
		DataSource application = dataSources.getIfUnique();
		if (qualified != null && qualified != application) {
			return described(qualified);
		}
		if (application == null) {
			List<String> names = List
				.of(BeanFactoryUtils.beanNamesForTypeIncludingAncestors(beanFactory, DataSource.class));
			throw new CoordinationDataSourceException(names);
		}
		// Spring Boot's data source says how it connects in spring.datasource.*; one of
		// the application's own, or one built from connection details (Docker Compose,
		// Testcontainers), in its pool's properties.
		// A test's replacement (@AutoConfigureTestDatabase's embedded database) or a pool
		// built from connection details leaves spring.datasource.url naming another
		// database: the pool's own URL, where it tells one, wins.
		CoordinationDataSource own = described(application);
		if (properties == null || properties.getUrl() == null || application instanceof EmbeddedDatabase
				|| (own.url() != null && !own.url().equals(properties.getUrl()))) {
			return own;
		}
		return new CoordinationDataSource(application, properties.getUrl(), properties.getUsername(),
				properties.getPassword());
	}

	// A data source of the application's own says how it connects through the properties
	// of the pools and drivers' data sources: Hikari's jdbcUrl, the others' url.
	private static CoordinationDataSource described(DataSource dataSource) {
		BeanWrapper properties = PropertyAccessorFactory.forBeanPropertyAccess(dataSource);
		return new CoordinationDataSource(dataSource, read(properties, "jdbcUrl", "url"),
				read(properties, "username", "user"), read(properties, "password"));
	}

	private static @Nullable String read(BeanWrapper properties, String... names) {
		for (String name : names) {
			try {
				if (properties.isReadableProperty(name) && properties.getPropertyValue(name) instanceof String value
						&& !value.isBlank()) {
					return value;
				}
			}
			catch (RuntimeException ex) {
				// A getter that fails tells nothing; the next name may.
			}
		}
		return null;
	}

}
