package dev.leader.mariadb;

import javax.sql.DataSource;

import dev.leader.jdbc.JdbcStoreFamily;
import dev.leader.jdbc.JdbcStoresAutoConfiguration;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * Auto-configuration of the MariaDB store family: defines the {@link MariaDbStoreFamily}
 * that {@link JdbcStoresAutoConfiguration} asks for the stores when the data source leads
 * to MariaDB. Runs before it, so that the family is there when the stores are built. An
 * application replaces it with a bean named {@code leaderMariaDbStoreFamily}.
 */
@AutoConfiguration(before = JdbcStoresAutoConfiguration.class)
@ConditionalOnClass(DataSource.class)
public final class MariaDbStoresAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean(name = "leaderMariaDbStoreFamily")
	JdbcStoreFamily leaderMariaDbStoreFamily() {
		return new MariaDbStoreFamily();
	}

}
