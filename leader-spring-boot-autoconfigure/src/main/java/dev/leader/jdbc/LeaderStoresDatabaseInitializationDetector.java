package dev.leader.jdbc;

import java.util.Set;

import dev.leader.daemon.DaemonStore;
import dev.leader.fencing.FencingStore;
import dev.leader.lease.CoordinationStore;

import org.springframework.boot.sql.init.dependency.AbstractBeansOfTypeDependsOnDatabaseInitializationDetector;
import org.springframework.boot.sql.init.dependency.DependsOnDatabaseInitializationDetector;

/**
 * A {@link DependsOnDatabaseInitializationDetector} that makes the starter's stores, its
 * own or the application's, wait for every database initializer, the
 * {@link LeaderSchemaMigration} included, before they are created.
 */
final class LeaderStoresDatabaseInitializationDetector
		extends AbstractBeansOfTypeDependsOnDatabaseInitializationDetector {

	@Override
	protected Set<Class<?>> getDependsOnDatabaseInitializationBeanTypes() {
		return Set.of(CoordinationStore.class, DaemonStore.class, FencingStore.class);
	}

}
