package dev.leader.jdbc;

import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.SQLException;
import java.util.Locale;

import javax.sql.DataSource;

import org.jspecify.annotations.Nullable;

import org.springframework.dao.DataAccessException;

/**
 * The databases the starter's stores run on, told apart by the product name that the JDBC
 * driver reports. Each has its own stores and its own migrations. Another database is
 * refused with an {@link UnsupportedDatabaseException}. The stores of each are built by
 * its {@link JdbcStoreFamily}.
 */
public enum JdbcDialect {

	/**
	 * PostgreSQL: the stores of {@code dev.leader.postgres}.
	 */
	POSTGRESQL("PostgreSQL", "classpath:db/leader/postgresql"),

	/**
	 * MariaDB 10.11 and later: the stores of {@code dev.leader.mariadb}.
	 */
	MARIADB("MariaDB", "classpath:db/leader/mariadb");

	private final String displayName;

	private final String migrations;

	JdbcDialect(String displayName, String migrations) {
		this.displayName = displayName;
		this.migrations = migrations;
	}

	/**
	 * Returns the name of the database, as messages print it.
	 * @return the name
	 */
	String displayName() {
		return this.displayName;
	}

	/**
	 * Returns the Flyway location of the dialect's migrations.
	 * @return the location
	 */
	String migrations() {
		return this.migrations;
	}

	/**
	 * Tells which dialect a data source speaks, from one of its connections.
	 * @param dataSource the data source
	 * @return the dialect
	 * @throws UnsupportedDatabaseException if the database is not one the starter
	 * supports
	 * @throws org.springframework.dao.DataAccessException if the database cannot be
	 * reached
	 */
	static JdbcDialect of(DataSource dataSource) {
		try (Connection connection = dataSource.getConnection()) {
			DatabaseMetaData metaData = connection.getMetaData();
			return of(metaData.getDatabaseProductName(), metaData.getDatabaseProductVersion());
		}
		catch (SQLException ex) {
			throw Statements.translate("tell the database", ex);
		}
	}

	/**
	 * Tells which dialect a data source speaks, from one of its connections, or, while
	 * the database cannot be reached, from its URL, so that an application whose database
	 * is down at startup still starts and leads once it answers: a {@code jdbc:mariadb:}
	 * URL means MariaDB, a {@code jdbc:postgresql:} URL or an unknown one PostgreSQL.
	 * @param dataSource the data source
	 * @param url the URL the data source was configured with, if known
	 * @return the dialect
	 * @throws UnsupportedDatabaseException if the database is not one the starter
	 * supports, or if it cannot be reached and the URL is neither PostgreSQL's nor
	 * MariaDB's
	 */
	static JdbcDialect of(DataSource dataSource, @Nullable String url) {
		try {
			return of(dataSource);
		}
		catch (DataAccessException ex) {
			if (url == null || url.startsWith("jdbc:postgresql:")) {
				return POSTGRESQL;
			}
			if (url.startsWith("jdbc:mariadb:")) {
				return MARIADB;
			}
			// A jdbc:mysql: URL may lead to MySQL or to MariaDB: the stores of a guess
			// could run on a database they cannot coordinate on.
			throw new UnsupportedDatabaseException(
					"leader-spring-boot-starter could not tell which database the application's DataSource "
							+ "leads to: the database did not answer at startup (" + ex.getMostSpecificCause()
							+ "), and its URL (spring.datasource.url, " + scheme(url)
							+ "…) is neither PostgreSQL's (jdbc:postgresql:) nor MariaDB's (jdbc:mariadb:).",
					"Start the database before the application: the starter tells it from what the driver "
							+ "reports. For a database that may be down when the application starts, use a URL "
							+ "that names it: jdbc:postgresql://host:port/database, or, for MariaDB 10.11 or "
							+ "later, jdbc:mariadb://host:port/database with MariaDB's driver (the dependency "
							+ "org.mariadb.jdbc:mariadb-java-client). Or set leader.enabled=false.");
		}
	}

	/**
	 * Tells which dialect a database speaks.
	 * @param productName the product name as the JDBC driver reports it
	 * @param productVersion the product version as the JDBC driver reports it
	 * @return the dialect
	 * @throws UnsupportedDatabaseException if the database is not one the starter
	 * supports
	 */
	static JdbcDialect of(String productName, String productVersion) {
		String name = productName.toLowerCase(Locale.ROOT);
		// MariaDB's driver reports "MariaDB" for a MariaDB server and "MySQL" for a
		// MySQL server; MySQL's driver reports "MySQL" for both, with a version that
		// names MariaDB.
		if (name.contains("mariadb")
				|| (name.contains("mysql") && productVersion.toLowerCase(Locale.ROOT).contains("mariadb"))) {
			return MARIADB;
		}
		if (name.contains("postgresql")) {
			return POSTGRESQL;
		}
		String hint = name.contains("mysql")
				? " MySQL is not supported yet: the MariaDB stores rely on MariaDB's idle_transaction_timeout and "
						+ "max_statement_time to bound the locks of fenced writes, which MySQL lacks."
				: "";
		throw new UnsupportedDatabaseException(
				"leader-spring-boot-starter keeps its leases in the application's DataSource, which leads to "
						+ productName + " " + productVersion
						+ ": the starter supports PostgreSQL and MariaDB 10.11 or later." + hint,
				"Point spring.datasource.url at PostgreSQL or at MariaDB 10.11 or later, define your own "
						+ "CoordinationStore, FencingStore and DaemonStore beans, or set leader.enabled=false.");
	}

	// Only the sub-protocol: what follows it may hold a user and a password, in any of
	// the drivers' forms (user:password@, (user=…)(password=…), scott/tiger@).
	static String scheme(String url) {
		int colon = url.indexOf(':', "jdbc:".length());
		return (url.startsWith("jdbc:") && colon > 0) ? url.substring(0, colon + 1) : "jdbc:";
	}

}
