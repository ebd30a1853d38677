package dev.leader.test;

import com.zaxxer.hikari.HikariConfig;

/**
 * MySQL's driver, Connector/J, on the server of the MariaDB tests: the same database
 * through a {@code jdbc:mysql:} URL, as an application that uses that driver reaches
 * MariaDB.
 */
public final class ConnectorJ {

	private ConnectorJ() {
	}

	/**
	 * Returns the URL of a MariaDB database for MySQL's driver.
	 * @param mariaDbUrl the database's URL for MariaDB's driver
	 * @return the {@code jdbc:mysql:} URL
	 */
	public static String url(String mariaDbUrl) {
		return mariaDbUrl.replaceFirst("^jdbc:mariadb:", "jdbc:mysql:");
	}

	/**
	 * Points a pool of the MariaDB tests at MySQL's driver, for
	 * {@link MigratedMariaDb#MigratedMariaDb(int, java.util.function.Consumer)}.
	 * @param config the pool's configuration, with a MariaDB URL
	 */
	public static void use(HikariConfig config) {
		config.setJdbcUrl(url(config.getJdbcUrl()));
	}

}
