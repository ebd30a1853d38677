package dev.leader.postgres;

import java.lang.reflect.Field;
import java.sql.Connection;
import java.sql.SQLException;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.postgresql.core.BaseConnection;
import org.postgresql.core.PGStream;
import org.postgresql.core.QueryExecutorBase;

/**
 * Takes pgjdbc's 1 ms wait out of the delivery of every notification on the listening
 * connection.
 * <p>
 * After each notification, {@code getNotifications} checks whether another one is coming:
 * when nothing is buffered, it reads the socket with a 1 ms timeout. The driver means to
 * do that read at most once a second, but it records the time of a read only when the
 * read finds data, so in practice every notification waits 1 ms before it is handed on
 * (pgjdbc issue 1547). Setting the time of the next check past the end of time leaves
 * only the check of buffered bytes, which on a plain socket sees everything that arrived.
 * On TLS, where buffered bytes may not show, a second notification of the same packet is
 * handed on by the next {@code getNotifications} call instead, at once: none is lost.
 * <p>
 * The switch sets a private field of the driver. On a driver without it, nothing changes
 * and the wait stays.
 */
final class PromptNotifications {

	// Read by JdbcRuntimeHints too: a native image keeps only the fields it was told of.
	static final String STREAM_FIELD = "pgStream";

	static final String NEXT_CHECK_FIELD = "nextStreamAvailableCheckTime";

	private static final Log logger = LogFactory.getLog(PromptNotifications.class);

	private final Object stream;

	private final Field nextCheck;

	private PromptNotifications(Object stream, Field nextCheck) {
		this.stream = stream;
		this.nextCheck = nextCheck;
	}

	/**
	 * Switches the wait off on the connection.
	 * @param connection a pgjdbc connection, or a pool's proxy of one
	 * @return the switch, to {@link #restore()} before the connection goes back to its
	 * pool; {@code null} if the driver does not have the field
	 */
	static @Nullable PromptNotifications enable(Connection connection) {
		try {
			Field streamField = QueryExecutorBase.class.getDeclaredField(STREAM_FIELD);
			streamField.setAccessible(true);
			Object stream = streamField.get(connection.unwrap(BaseConnection.class).getQueryExecutor());
			Field nextCheck = PGStream.class.getDeclaredField(NEXT_CHECK_FIELD);
			nextCheck.setAccessible(true);
			nextCheck.setLong(stream, Long.MAX_VALUE);
			return new PromptNotifications(stream, nextCheck);
		}
		catch (ReflectiveOperationException | SQLException | RuntimeException ex) {
			logger.debug("Notifications are handed on after pgjdbc's 1 ms wait: " + ex);
			return null;
		}
	}

	/**
	 * Gives the driver its wait back.
	 */
	void restore() {
		try {
			this.nextCheck.setLong(this.stream, 0);
		}
		catch (IllegalAccessException ex) {
			logger.debug("Could not give pgjdbc its notification wait back: " + ex);
		}
	}

}
