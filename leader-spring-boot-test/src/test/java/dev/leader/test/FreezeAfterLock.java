package dev.leader.test;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

/**
 * Data sources of MariaDB whose connections freeze the calling thread, as a paused
 * process would be frozen, at the first statement they create after a guard's lock
 * statement ({@code LOCK IN SHARE MODE}, or another given statement) ran, until
 * {@link #thaw}; the server sees an idle session in a transaction that holds the lock.
 */
public final class FreezeAfterLock {

	/**
	 * Counted down when the calling thread froze.
	 */
	public final CountDownLatch frozen = new CountDownLatch(1);

	/**
	 * Counted down by the test to let the frozen thread go on.
	 */
	public final CountDownLatch thaw = new CountDownLatch(1);

	private final String lockStatement;

	private volatile boolean locked;

	/**
	 * Freezes after a guard's lock statement, one with {@code LOCK IN SHARE MODE}.
	 */
	public FreezeAfterLock() {
		this("LOCK IN SHARE MODE");
	}

	/**
	 * Freezes after the first statement whose SQL contains the given text.
	 * @param lockStatement text of the statement that takes the locks
	 */
	public FreezeAfterLock(String lockStatement) {
		this.lockStatement = lockStatement;
	}

	/**
	 * Wraps a data source.
	 * @param target the data source
	 * @return a data source whose connections freeze as described
	 */
	public DataSource wrap(DataSource target) {
		return Proxies.proxy(DataSource.class, (proxy, method, args) -> {
			Object result = Proxies.invoke(target, method, args);
			return (result instanceof Connection connection) ? connection(connection) : result;
		});
	}

	private Connection connection(Connection target) {
		Connection[] self = new Connection[1];
		self[0] = Proxies.proxy(Connection.class, (proxy, method, args) -> {
			if (method.getName().startsWith("create") || method.getName().startsWith("prepare")) {
				if (this.locked && this.frozen.getCount() > 0) {
					this.frozen.countDown();
					this.thaw.await(30, TimeUnit.SECONDS);
				}
			}
			Object result = Proxies.invoke(target, method, args);
			if (result instanceof PreparedStatement statement && ((String) args[0]).contains(this.lockStatement)) {
				return statement(statement, self[0]);
			}
			return result;
		});
		return self[0];
	}

	private PreparedStatement statement(PreparedStatement target, Connection connection) {
		return Proxies.proxy(PreparedStatement.class, (proxy, method, args) -> {
			if (method.getName().equals("getConnection")) {
				return connection;
			}
			Object result = Proxies.invoke(target, method, args);
			if (method.getName().startsWith("execute")) {
				this.locked = true;
			}
			return result;
		});
	}

}
