package dev.leader.postgres;

import javax.sql.DataSource;

import dev.leader.jdbc.JdbcStoreFamily;
import dev.leader.jdbc.JdbcStoresAutoConfiguration;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * Auto-configuration of the PostgreSQL store family: defines the
 * {@link PostgresStoreFamily} that {@link JdbcStoresAutoConfiguration} asks for the
 * stores when the data source leads to PostgreSQL. Runs before it, so that the family is
 * there when the stores are built. An application replaces it with a bean named
 * {@code leaderPostgresStoreFamily}.
 */
@AutoConfiguration(before = JdbcStoresAutoConfiguration.class)
@ConditionalOnClass(DataSource.class)
public final class PostgresStoresAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean(name = "leaderPostgresStoreFamily")
	JdbcStoreFamily leaderPostgresStoreFamily() {
		return new PostgresStoreFamily();
	}

}
