package dev.leader.benchmarks;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;

/**
 * The server's maintenance database as the harness logs in to it: where the benchmarks'
 * database is created and dropped, and where the monitoring queries run, so that the
 * benchmarks' database counts none of them.
 *
 * @param url the JDBC URL of the maintenance database
 * @param user the harness's user
 * @param password the harness's password
 */
record MaintenanceDatabase(String url, String user, String password) {

	Dialect dialect() {
		return Dialect.of(this.url);
	}

	Connection connect() throws SQLException {
		return DriverManager.getConnection(this.url, this.user, this.password);
	}

	/**
	 * Returns the JDBC URL of another database of the server: this URL with that
	 * database's name in place of the maintenance database's, its parameters kept.
	 * @param database the name of the other database
	 * @return the URL
	 */
	String urlOf(String database) {
		int hosts = this.url.indexOf("//") + 2;
		int query = this.url.indexOf('?', hosts);
		int end = (query >= 0) ? query : this.url.length();
		int slash = this.url.indexOf('/', hosts);
		String base = this.url.substring(0, (slash >= 0 && slash < end) ? slash : end) + "/" + database;
		return (query >= 0) ? base + this.url.substring(query) : base;
	}

}
