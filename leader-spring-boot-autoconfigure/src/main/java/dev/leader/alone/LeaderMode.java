package dev.leader.alone;

import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Objects;
import java.util.regex.Pattern;

import javax.sql.DataSource;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.jdbc.DatabaseDriver;
import org.springframework.boot.jdbc.EmbeddedDatabaseConnection;
import org.springframework.util.ClassUtils;

/**
 * How this node coordinates, decided when the application starts (not when it is built,
 * so that an ahead-of-time processed application decides it too): in a <em>cluster</em>,
 * through the application's database, or <em>alone</em>, when no other process can share
 * a coordinator with it. A node runs alone when {@code leader.enabled=false}, or when the
 * DataSource it keeps its tables in (the {@link dev.leader.LeaderDataSource} one, else
 * the application's) is an in-memory embedded database (H2, HSQLDB or Derby, as Spring
 * Boot's {@link EmbeddedDatabaseConnection#isEmbedded(DataSource)} tells them): it then
 * leads every group and runs every daemon, on the {@link LocalStores}, and says so in one
 * WARN line at startup. A node whose leases another engine keeps
 * ({@code leader.etcd.endpoints}, or a coordination store of the application's own) has
 * no mode: it coordinates through that engine whatever its DataSource.
 * <p>
 * Internal, not for application use; the mode shows in {@code /actuator/leadership}.
 */
public final class LeaderMode {

	private static final Log logger = LogFactory.getLog("dev.leader.autoconfigure.LeaderAutoConfiguration");

	private static final String EMBEDDED_DATABASE_CONNECTION = "org.springframework.boot.jdbc.EmbeddedDatabaseConnection";

	private static final Pattern IN_MEMORY_URL = Pattern.compile("jdbc:(h2:mem:|hsqldb:mem:|derby:memory:)",
			Pattern.CASE_INSENSITIVE);

	private final @Nullable String aloneReason;

	private final @Nullable LocalStores stores;

	private LeaderMode(@Nullable String aloneReason, Duration queryTimeout) {
		this.aloneReason = aloneReason;
		this.stores = (aloneReason != null) ? new LocalStores(queryTimeout) : null;
	}

	/**
	 * Decides the mode, and logs a warning when the node runs alone.
	 * @param enabled the value of {@code leader.enabled}
	 * @param dataSource the data source the starter keeps its tables in, asked only when
	 * enabled, and {@code null} only when not
	 * @param url the URL the data source was configured with, if known
	 * ({@code spring.datasource.url}, or the {@code @LeaderDataSource}'s own)
	 * @param queryTimeout how long a change waits for the transactions that hold a lock
	 * it needs, when the node runs alone ({@code leader.jdbc.query-timeout})
	 * @return the mode
	 */
	public static LeaderMode decide(boolean enabled, @Nullable DataSource dataSource, @Nullable String url,
			Duration queryTimeout) {
		String reason = (!enabled) ? "leader.enabled=false"
				: inMemory(Objects.requireNonNull(dataSource, "dataSource is required when enabled"), url);
		LeaderMode mode = new LeaderMode(reason, queryTimeout);
		if (reason != null) {
			logger.warn("Leader election runs in single-node mode (" + reason + "): this node leads every group "
					+ "and runs every daemon, without coordinating with any other instance. Never run a second "
					+ "instance with this setting: each would lead alone.");
		}
		return mode;
	}

	// Why the data source is one no other process can share, or null if it is not an
	// in-memory embedded database or cannot be reached.
	private static @Nullable String inMemory(DataSource dataSource, @Nullable String url) {
		if (!ClassUtils.isPresent(EMBEDDED_DATABASE_CONNECTION, LeaderMode.class.getClassLoader())) {
			return null;
		}
		// The URL of a server database spares a connection attempt, which waits for the
		// pool's timeout while the database is down at startup.
		if (url != null
				&& !EmbeddedDatabaseConnection.isEmbedded(DatabaseDriver.fromJdbcUrl(url).getDriverClassName(), url)) {
			return null;
		}
		if (!EmbeddedDatabaseConnection.isEmbedded(dataSource)) {
			return null;
		}
		try (Connection connection = dataSource.getConnection()) {
			DatabaseMetaData metaData = connection.getMetaData();
			String actual = metaData.getURL();
			// Spring Boot counts every Derby URL as embedded, a network server's and a
			// file's too, and an in-memory H2 can be served over TCP: only a database in
			// this JVM's memory, reached without a network, is one no other process
			// shares.
			if (!isInMemory(actual)) {
				return null;
			}
			return "the DataSource is an in-memory " + metaData.getDatabaseProductName() + " database ("
					+ withoutParameters(actual) + "), which no other process can share";
		}
		catch (SQLException ex) {
			return null;
		}
	}

	static boolean isInMemory(@Nullable String url) {
		return url != null && !url.contains("//") && IN_MEMORY_URL.matcher(url).lookingAt();
	}

	private static String withoutParameters(String url) {
		int end = url.length();
		for (char separator : new char[] { ';', '?' }) {
			int at = url.indexOf(separator);
			if (at >= 0 && at < end) {
				end = at;
			}
		}
		return url.substring(0, end);
	}

	/**
	 * Returns whether this node runs alone.
	 * @return whether it runs alone
	 */
	public boolean isAlone() {
		return this.aloneReason != null;
	}

	/**
	 * Returns the mode's name: {@code cluster} or {@code alone}.
	 * @return the name
	 */
	public String name() {
		return isAlone() ? "alone" : "cluster";
	}

	/**
	 * Returns why this node runs alone.
	 * @return the reason, or {@code null} in a cluster
	 */
	public @Nullable String reason() {
		return this.aloneReason;
	}

	/**
	 * Returns the stores of a node that runs alone.
	 * @return the stores
	 * @throws IllegalStateException in a cluster
	 */
	public LocalStores stores() {
		LocalStores stores = this.stores;
		if (stores == null) {
			throw new IllegalStateException("This node coordinates through its database, not alone");
		}
		return stores;
	}

	@Override
	public String toString() {
		return isAlone() ? "alone (" + this.aloneReason + ")" : "cluster";
	}

}
