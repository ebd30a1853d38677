package dev.leader.test;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashSet;
import java.util.Set;

/**
 * What a stopped node can leave behind: its {@code leader-} threads, and its sessions on
 * the database server.
 */
public final class Leftovers {

	private Leftovers() {
	}

	/**
	 * Returns the live threads of this JVM whose names start with {@code leader-}.
	 * @return the threads
	 */
	public static Set<Thread> leaderThreads() {
		Set<Thread> threads = new HashSet<>(Thread.getAllStackTraces().keySet());
		threads.removeIf((thread) -> !thread.getName().startsWith("leader-"));
		return threads;
	}

	/**
	 * Counts the sessions on the database's server with an application name.
	 * @param database the database
	 * @param applicationName the application name
	 * @return the number of sessions
	 * @throws SQLException if the count cannot be read
	 */
	public static long sessions(TestDatabase database, String applicationName) throws SQLException {
		try (Connection connection = database.connect();
				PreparedStatement statement = connection
					.prepareStatement("SELECT count(*) FROM pg_stat_activity WHERE application_name = ?")) {
			statement.setString(1, applicationName);
			try (ResultSet rows = statement.executeQuery()) {
				rows.next();
				return rows.getLong(1);
			}
		}
	}

}
