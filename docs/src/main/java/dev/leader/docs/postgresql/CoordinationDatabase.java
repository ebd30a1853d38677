package dev.leader.docs.postgresql;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import dev.leader.LeaderDataSource;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.jdbc.DataSourceBuilder;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

// tag::datasource[]
@Configuration(proxyBeanMethods = false)
class CoordinationDatabase {

	// Not a default candidate: the DataSource that Spring Boot builds from
	// spring.datasource.* stays the application's.
	@Bean(defaultCandidate = false)
	@LeaderDataSource
	@ConfigurationProperties("coordination.datasource")
	HikariDataSource coordinationDataSource() {
		return DataSourceBuilder.create().type(HikariDataSource.class).build();
	}

	// Only for fenced writes to tables of the coordination database.
	@Bean(defaultCandidate = false)
	DataSourceTransactionManager coordinationTransactionManager(@LeaderDataSource DataSource dataSource) {
		return new DataSourceTransactionManager(dataSource);
	}

}
// end::datasource[]
