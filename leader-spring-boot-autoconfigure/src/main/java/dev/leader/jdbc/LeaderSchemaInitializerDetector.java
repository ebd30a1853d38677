package dev.leader.jdbc;

import java.util.Set;

import org.springframework.boot.sql.init.dependency.AbstractBeansOfTypeDatabaseInitializerDetector;
import org.springframework.boot.sql.init.dependency.DatabaseInitializerDetector;
import org.springframework.core.Ordered;

/**
 * A {@link DatabaseInitializerDetector} that tells Spring Boot that the
 * {@link LeaderSchemaMigration} initializes the database. Ordered last, so that the
 * starter's tables are created after the application's own migrations and scripts have
 * run.
 */
final class LeaderSchemaInitializerDetector extends AbstractBeansOfTypeDatabaseInitializerDetector {

	@Override
	protected Set<Class<?>> getDatabaseInitializerBeanTypes() {
		return Set.of(LeaderSchemaMigration.class);
	}

	@Override
	public int getOrder() {
		return Ordered.LOWEST_PRECEDENCE;
	}

}
