package dev.leader.jdbc;

import java.util.List;

import org.springframework.core.io.support.SpringFactoriesLoader;

/**
 * Finds the {@link JdbcStoreFamily} of a dialect among those there are.
 */
final class JdbcStoreFamilies {

	private JdbcStoreFamilies() {
	}

	/**
	 * Returns the first family of a dialect.
	 * @param dialect the database's dialect
	 * @param families the families there are, in order
	 * @return the family
	 * @throws UnsupportedDatabaseException if none builds that dialect's stores
	 */
	static JdbcStoreFamily of(JdbcDialect dialect, List<? extends JdbcStoreFamily> families) {
		for (JdbcStoreFamily family : families) {
			if (family.dialect() == dialect) {
				return family;
			}
		}
		throw new UnsupportedDatabaseException(
				"leader-spring-boot-starter keeps its leases in the application's DataSource, which leads to "
						+ dialect.displayName() + ", but no store family for " + dialect.displayName()
						+ " is configured (its auto-configuration is excluded, or its JdbcStoreFamily bean is "
						+ "missing).",
				"Stop excluding the auto-configuration of the " + dialect.displayName() + " stores, define a "
						+ "JdbcStoreFamily bean for " + dialect.displayName() + ", define your own "
						+ "CoordinationStore, FencingStore and DaemonStore beans, or set leader.enabled=false.");
	}

	/**
	 * Returns the family beans, or, when there are none, those listed in
	 * {@code META-INF/spring.factories}: the migration only checks the database with its
	 * family, so that an application whose own beans replace every store migrates as
	 * before.
	 * @param beans the family beans, in order
	 * @return the families
	 */
	static List<? extends JdbcStoreFamily> beansOrListed(List<? extends JdbcStoreFamily> beans) {
		return beans.isEmpty() ? listed(JdbcStoreFamilies.class.getClassLoader()) : beans;
	}

	/**
	 * Returns the families listed in {@code META-INF/spring.factories}, for a schema
	 * migration built without a Spring context.
	 * @param classLoader the class loader to list them with
	 * @return the families
	 */
	static List<JdbcStoreFamily> listed(ClassLoader classLoader) {
		return SpringFactoriesLoader.forDefaultResourceLocation(classLoader).load(JdbcStoreFamily.class);
	}

}
