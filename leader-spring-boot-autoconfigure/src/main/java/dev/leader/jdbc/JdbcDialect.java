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
 * driver reports. Each has its own stores and its own migrations. Another database, or
 * MariaDB reached through another driver than MariaDB's, is refused with an
 * {@link UnsupportedDatabaseException}.
 */
enum JdbcDialect {

	/**
	 * PostgreSQL: {@link PostgresCoordinationStore} and its siblings.
	 */
	POSTGRESQL("classpath:db/leader/postgresql"),

	/**
	 * MariaDB 10.11 and later: {@link MariaDbCoordinationStore} and its siblings.
	 */
	MARIADB("classpath:db/leader/mariadb");

	private final String migrations;

	JdbcDialect(String migrations) {
		this.migrations = migrations;
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
	 * @throws UnsupportedDatabaseException if the database, or the driver that reaches
	 * it, is not one the starter supports
	 * @throws org.springframework.dao.DataAccessException if the database cannot be
	 * reached
	 */
	static JdbcDialect of(DataSource dataSource) {
		try (Connection connection = dataSource.getConnection()) {
			DatabaseMetaData metaData = connection.getMetaData();
			return of(metaData.getDatabaseProductName(), metaData.getDatabaseProductVersion(),
					metaData.getDriverName() + " " + metaData.getDriverVersion());
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
	 * @throws UnsupportedDatabaseException if the database, or the driver that reaches
	 * it, is not one the starter supports, or if the database cannot be reached and the
	 * URL is neither PostgreSQL's nor MariaDB's
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
			// A jdbc:mysql: URL may lead to MySQL or to MariaDB, and only MariaDB's own
			// driver serves the MariaDB stores: the stores of a guess could run on a
			// database or a driver they cannot coordinate on.
			throw new UnsupportedDatabaseException("leader-spring-boot-starter could not tell which database the "
					+ "application's DataSource leads to: the database did not answer at startup ("
					+ ex.getMostSpecificCause().getMessage() + "), and its URL (spring.datasource.url, " + scheme(url)
					+ "…) is neither PostgreSQL's (jdbc:postgresql:) nor MariaDB's (jdbc:mariadb:).",
					"Point spring.datasource.url at PostgreSQL (jdbc:postgresql://host:port/database) or at "
							+ "MariaDB 10.11 or later through MariaDB's driver (jdbc:mariadb://host:port/database, "
							+ "with the dependency org.mariadb.jdbc:mariadb-java-client), or set "
							+ "leader.enabled=false. With leader.jdbc.migrate=true (the default) the starter "
							+ "checks the database at startup, and fails there if it does not answer.");
		}
	}

	/**
	 * Tells which dialect a database speaks.
	 * @param productName the product name as the JDBC driver reports it
	 * @param productVersion the product version as the JDBC driver reports it
	 * @param driver the driver's name and version as it reports them
	 * @return the dialect
	 * @throws UnsupportedDatabaseException if the database, or the driver that reaches
	 * it, is not one the starter supports
	 */
	static JdbcDialect of(String productName, String productVersion, String driver) {
		String name = productName.toLowerCase(Locale.ROOT);
		// MariaDB's driver reports "MariaDB" for a MariaDB server and "MySQL" for a
		// MySQL server; MySQL's driver reports "MySQL" for both, with a version that
		// names MariaDB.
		if (name.contains("mariadb")
				|| (name.contains("mysql") && productVersion.toLowerCase(Locale.ROOT).contains("mariadb"))) {
			if (!driver.toLowerCase(Locale.ROOT).contains("mariadb")) {
				throw unsupportedMariaDbDriver(productVersion, driver);
			}
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
				"leader-spring-boot-starter keeps its leases in the application's " + "DataSource, which leads to "
						+ productName + " " + productVersion + ": the starter supports "
						+ "PostgreSQL and MariaDB 10.11 or later." + hint,
				"Point spring.datasource.url at PostgreSQL or at MariaDB 10.11 or later, define your own "
						+ "CoordinationStore, FencingStore and DaemonStore beans, or set leader.enabled=false.");
	}

	// MySQL's driver announces MariaDB's version as MySQL 5.5.5, so it sends the times
	// the stores bind without their fractions (a lease granted at 10:00:00.9 would
	// expire up to a second before its holder counts), and it keeps the auto-commit of
	// Connection.setAutoCommit where the MariaDB stores set it with their idle limits in
	// one statement.
	private static UnsupportedDatabaseException unsupportedMariaDbDriver(String productVersion, String driver) {
		return new UnsupportedDatabaseException("leader-spring-boot-starter keeps its leases in the application's "
				+ "DataSource, which leads to MariaDB " + productVersion + " through " + driver
				+ ": the MariaDB stores run only through MariaDB's own driver. MySQL's driver (Connector/J) takes "
				+ "MariaDB for MySQL 5.5.5, so it drops the fractions of a second of the times the stores send, "
				+ "which could end a lease up to a second before its holder counts, and it does not follow the "
				+ "auto-commit mode that the stores set for their transactions.",
				"Reach MariaDB through MariaDB's driver: add the dependency org.mariadb.jdbc:mariadb-java-client "
						+ "(its version is managed by Spring Boot), change spring.datasource.url from jdbc:mysql:// "
						+ "to jdbc:mariadb://, and remove spring.datasource.driver-class-name if it names "
						+ "com.mysql.cj.jdbc.Driver. Or set leader.enabled=false.");
	}

	private static String scheme(String url) {
		int slashes = url.indexOf("//");
		if (slashes > 0) {
			return url.substring(0, slashes + 2);
		}
		int colon = url.indexOf(':', "jdbc:".length());
		return (colon > 0) ? url.substring(0, colon + 1) : "jdbc:";
	}

}
