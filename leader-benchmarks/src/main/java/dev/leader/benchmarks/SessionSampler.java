package dev.leader.benchmarks;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * Samples {@code pg_stat_activity} for the sessions of one database on a thread of its
 * own, and counts the statements that started in each: one per distinct
 * {@code query_start} of a session, with its text and the session's
 * {@code application_name}. Runs on a connection to another database, so that the
 * database it watches counts none of its transactions.
 */
final class SessionSampler implements AutoCloseable {

	private final Connection connection;

	private final Thread thread;

	private final Map<String, String> seen = new LinkedHashMap<>();

	private volatile boolean running = true;

	SessionSampler(Connection connection, String database, Duration interval) throws SQLException {
		this.connection = connection;
		PreparedStatement statement = connection.prepareStatement("SELECT pid, application_name, query_start, query "
				+ "FROM pg_stat_activity WHERE datname = ? AND query_start IS NOT NULL");
		statement.setString(1, database);
		this.thread = new Thread(() -> {
			try (statement) {
				boolean first = true;
				while (this.running) {
					try (ResultSet rows = statement.executeQuery()) {
						while (rows.next()) {
							String key = rows.getInt(1) + "@" + rows.getString(3);
							synchronized (this.seen) {
								// Statements under way before sampling began are marked,
								// to be left out.
								this.seen.putIfAbsent(key, first ? "" : rows.getString(2) + "\t" + rows.getString(4));
							}
						}
					}
					first = false;
					TimeUnit.NANOSECONDS.sleep(interval.toNanos());
				}
			}
			catch (SQLException | InterruptedException ex) {
				// stopped
			}
		}, "bench-session-sampler");
		this.thread.setDaemon(true);
		this.thread.start();
	}

	/**
	 * Stops sampling, and returns how many statements each application sent, by statement
	 * text (whitespace collapsed, cut at 120 characters) and then application name. The
	 * statements under way at the first sample are left out.
	 * @return the counts, by statement text and then application name
	 */
	Map<String, Map<String, Integer>> stop() throws InterruptedException {
		this.running = false;
		this.thread.join(TimeUnit.SECONDS.toMillis(5));
		Map<String, Map<String, Integer>> counts = new TreeMap<>();
		synchronized (this.seen) {
			this.seen.values().stream().filter((value) -> !value.isEmpty()).forEach((value) -> {
				String[] parts = value.split("\t", 2);
				String text = parts[1].replaceAll("\\s+", " ").trim();
				text = text.isEmpty() ? "(empty query)" : text.substring(0, Math.min(text.length(), 120));
				counts.computeIfAbsent(text, (key) -> new TreeMap<>()).merge(parts[0], 1, Integer::sum);
			});
		}
		return counts;
	}

	@Override
	public void close() throws SQLException {
		this.running = false;
		this.connection.close();
	}

}
