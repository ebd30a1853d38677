package dev.leader.sample;

import dev.leader.Leadership;
import dev.leader.lease.LeaseSettings;
import dev.leader.test.TestDatabase;

import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.servlet.client.RestTestClient;
import org.springframework.test.web.servlet.client.assertj.RestTestClientResponse;

/**
 * The base of the tests that run the sample application against a fresh schema of the
 * {@link TestDatabase}: the schema is created for the test class's context and dropped
 * when that context closes, after the class. Holds the beans that these tests read, and a
 * client of the application's HTTP port for a subclass that configures one.
 */
@Import(FreshSchemaTests.SchemaConfiguration.class)
@DirtiesContext
abstract class FreshSchemaTests {

	static TestDatabase database;

	@Autowired
	RestTestClient http;

	@Autowired
	Leadership leadership;

	@Autowired
	LeaseSettings settings;

	@Autowired
	JdbcClient jdbc;

	@DynamicPropertySource
	static void useFreshSchema(DynamicPropertyRegistry registry) {
		database = TestDatabase.createSchema();
		registry.add("spring.datasource.url", database::url);
		registry.add("spring.datasource.username", database::user);
		registry.add("spring.datasource.password", database::password);
	}

	RestTestClientResponse get(String path) {
		return RestTestClientResponse.from(this.http.get().uri(path).exchange());
	}

	// Imported, not a @TestConfiguration: the demo's test starts nodes with this class
	// path, and their component scan must not find it.
	static class SchemaConfiguration {

		// Dropped with the context, after the lifecycle beans have stopped: the
		// application releases its leases and stops its jobs before its tables go.
		@Bean
		DisposableBean dropSchemaOnClose() {
			return database::drop;
		}

	}

}
