package dev.leader.benchmarks;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.jspecify.annotations.Nullable;

/**
 * PostgreSQL's log, as the harness reads it for the benchmarks' database through the
 * maintenance database ({@code pg_read_file}, which needs a superuser or
 * {@code pg_read_server_files}). On MariaDB, whose error log the harness does not read,
 * every read answers that the log cannot be read.
 *
 * @param maintenance the server's maintenance database
 * @param database the name of the benchmarks' database, whose lines count
 * @param configuredPath the path of the server's log file, or {@code null} to ask the
 * server
 */
record ServerLog(MaintenanceDatabase maintenance, String database, @Nullable String configuredPath) {

	/**
	 * Makes the server log every statement of the database's new sessions with its
	 * duration ({@code log_min_duration_statement = 0}), empty queries included, so that
	 * {@link #since(long)} can list them. Needs a superuser; PostgreSQL only.
	 * @return whether the setting was made
	 */
	boolean logStatements() {
		if (this.maintenance.dialect() != Dialect.POSTGRESQL) {
			return false;
		}
		try (Connection connection = this.maintenance.connect(); Statement statement = connection.createStatement()) {
			statement.execute("ALTER DATABASE " + this.database + " SET log_min_duration_statement = 0");
			return true;
		}
		catch (SQLException ex) {
			System.out.println("NOTE statements of " + this.database + " not logged: " + ex.getMessage());
			return false;
		}
	}

	/**
	 * Returns the size of the log, to read or count the lines written after it with
	 * {@link #since(long)} or {@link #errorLines(long)}.
	 * @return the size, or -1 if the log cannot be read
	 */
	long size() {
		String log = path();
		if (log == null) {
			return -1;
		}
		try (Connection connection = this.maintenance.connect();
				PreparedStatement statement = connection.prepareStatement("SELECT size FROM pg_stat_file(?)")) {
			statement.setString(1, log);
			try (ResultSet row = statement.executeQuery()) {
				row.next();
				return row.getLong(1);
			}
		}
		catch (SQLException ex) {
			return -1;
		}
	}

	/**
	 * Returns what the server wrote to its log after the given size.
	 * @param fromSize a size returned by {@link #size()}
	 * @return the text, or {@code null} if the log cannot be read
	 */
	@Nullable String since(long fromSize) {
		String log = path();
		if (log == null || fromSize < 0) {
			return null;
		}
		try (Connection connection = this.maintenance.connect();
				PreparedStatement statement = connection.prepareStatement(
						"SELECT pg_read_file(?, ?, greatest((SELECT size FROM pg_stat_file(?)) - ?, 0))")) {
			bindTail(statement, log, fromSize);
			try (ResultSet row = statement.executeQuery()) {
				row.next();
				return row.getString(1);
			}
		}
		catch (SQLException ex) {
			return null;
		}
	}

	/**
	 * Counts the ERROR, FATAL and PANIC lines of the database written to the log after
	 * the given size.
	 * @param fromSize the size of the log to count after, in bytes
	 * @return the count, or -1 if the log cannot be read
	 */
	long errorLines(long fromSize) {
		String log = path();
		if (log == null || fromSize < 0) {
			return -1;
		}
		try (Connection connection = this.maintenance.connect();
				PreparedStatement statement = connection.prepareStatement("""
						SELECT count(*) FROM regexp_split_to_table(
						  pg_read_file(?, ?, greatest((SELECT size FROM pg_stat_file(?)) - ?, 0)), E'\\n') AS line
						WHERE line LIKE ? AND line ~ '(ERROR|FATAL|PANIC):'
						""")) {
			bindTail(statement, log, fromSize);
			statement.setString(5, "%@" + this.database + " %");
			try (ResultSet row = statement.executeQuery()) {
				row.next();
				return row.getLong(1);
			}
		}
		catch (SQLException ex) {
			return -1;
		}
	}

	/**
	 * Binds the first four parameters of a {@code pg_read_file} of the log's tail.
	 */
	private static void bindTail(PreparedStatement statement, String log, long fromSize) throws SQLException {
		statement.setString(1, log);
		statement.setLong(2, fromSize);
		statement.setString(3, log);
		statement.setLong(4, fromSize);
	}

	/**
	 * Returns the path of PostgreSQL's log; {@code null} on MariaDB.
	 * @return the path, or {@code null}
	 */
	private @Nullable String path() {
		if (this.maintenance.dialect() != Dialect.POSTGRESQL) {
			return null;
		}
		if (this.configuredPath != null) {
			return this.configuredPath;
		}
		try (Connection connection = this.maintenance.connect();
				Statement statement = connection.createStatement();
				ResultSet row = statement.executeQuery("SELECT pg_current_logfile()")) {
			row.next();
			String file = row.getString(1);
			try (ResultSet dir = statement.executeQuery("SHOW data_directory")) {
				dir.next();
				String dataDirectory = dir.getString(1);
				if (file != null) {
					return file.startsWith("/") ? file : dataDirectory + "/" + file;
				}
				// Debian and Ubuntu clusters log to
				// /var/log/postgresql/postgresql-<version>-<cluster>.log
				Matcher debian = Pattern.compile("/var/lib/postgresql/([^/]+)/([^/]+)/?").matcher(dataDirectory);
				return debian.matches()
						? "/var/log/postgresql/postgresql-" + debian.group(1) + "-" + debian.group(2) + ".log" : null;
			}
		}
		catch (SQLException ex) {
			return null;
		}
	}

}
