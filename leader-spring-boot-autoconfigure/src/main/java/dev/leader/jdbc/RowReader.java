package dev.leader.jdbc;

import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * Reads one value from the row a result set stands on.
 *
 * @param <T> the type of the value
 */
@FunctionalInterface
public interface RowReader<T> {

	/**
	 * Reads the {@code group_name} column. A constant, so that the JVM links it with the
	 * class rather than on a node's first release, which is on a hand-over's path.
	 */
	RowReader<String> GROUP_NAME = (rows) -> rows.getString("group_name");

	T read(ResultSet rows) throws SQLException;

}
