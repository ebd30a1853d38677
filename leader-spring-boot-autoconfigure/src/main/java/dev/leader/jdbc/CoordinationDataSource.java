package dev.leader.jdbc;

import javax.sql.DataSource;

import org.jspecify.annotations.Nullable;

/**
 * The {@link DataSource} the starter keeps its tables in: the application's
 * {@link dev.leader.LeaderDataSource @LeaderDataSource} bean if there is one, else its
 * only or primary {@code DataSource}, with what is known of how it connects. Not a
 * {@code DataSource} itself, so that it never competes with the application's beans.
 * <p>
 * Internal, not for application use: built by the auto-configuration, and public only for
 * it.
 *
 * @param dataSource the data source
 * @param url its JDBC URL, if known, so that a database that is down at startup does not
 * keep the starter from telling which database it is
 * @param username the user its connections log in as, if known; the default of
 * {@code leader.jdbc.notifications.username}
 * @param password that user's password, if known; the default of
 * {@code leader.jdbc.notifications.password}
 */
public record CoordinationDataSource(DataSource dataSource, @Nullable String url, @Nullable String username,
		@Nullable String password) {

	@Override
	public String toString() {
		return "CoordinationDataSource[" + this.dataSource + "]";
	}

}
