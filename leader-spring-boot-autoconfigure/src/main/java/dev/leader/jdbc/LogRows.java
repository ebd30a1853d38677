package dev.leader.jdbc;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.List;

import dev.leader.log.Bookmark;
import dev.leader.log.LogEntry;
import org.jspecify.annotations.Nullable;

/**
 * The reads of a decision log that both dialects make alike: the entries after an index,
 * and the head. The statements are the dialect's; so is how a time is read, since the two
 * databases return their times differently.
 */
public final class LogRows {

	private LogRows() {
	}

	/**
	 * Returns the call that reads a group's entries after an index, from a statement that
	 * takes the group, the index and the limit, in that order.
	 * @param group the group
	 * @param afterIndex the index after which to read
	 * @param limit the most entries to read
	 * @param time reads the dialect's time from a row's column
	 * @return the call, which returns the entries in index order
	 */
	public static Statements.Callback<List<LogEntry>> read(String group, long afterIndex, int limit, TimeColumn time) {
		return (statement) -> {
			statement.setString(1, group);
			statement.setLong(2, afterIndex);
			statement.setInt(3, limit);
			return Statements.list(statement,
					(rows) -> new LogEntry(group, rows.getLong("log_index"), rows.getLong("term"),
							rows.getString("type"), rows.getString("payload"), time.read(rows, "appended_at")));
		};
	}

	/**
	 * Returns the call that reads the head of a group's log, from a statement that takes
	 * the group and returns {@code last_term} and {@code last_index} in a row, or no row.
	 * @param group the group
	 * @return the call, which returns the head, or a bookmark at 0 for a log without one
	 */
	public static Statements.Callback<Bookmark> head(String group) {
		return (statement) -> {
			statement.setString(1, group);
			try (ResultSet rows = statement.executeQuery()) {
				return rows.next() ? new Bookmark(group, rows.getLong("last_term"), rows.getLong("last_index"))
						: new Bookmark(group, 0, 0);
			}
		};
	}

	/**
	 * Reads a time from a column of the row a result set stands on.
	 */
	@FunctionalInterface
	public interface TimeColumn {

		@Nullable Instant read(ResultSet rows, String column) throws SQLException;

	}

}
