package dev.leader.jdbc;

import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * Reads one value from the row a result set stands on.
 *
 * @param <T> the type of the value
 */
@FunctionalInterface
interface RowReader<T> {

	T read(ResultSet rows) throws SQLException;

}
