package dev.leader.test;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;

import javax.sql.DataSource;

/**
 * Wraps a data source so that the first statement whose SQL contains a given text commits
 * late: it runs in a transaction that commits only a while after it returned, holding its
 * locks and invisible to other sessions until then, as a commit held up by a stalled disk
 * or a slow synchronous standby is.
 */
public final class SlowCommit {

	/**
	 * Counted down once the statement has run, before its commit.
	 */
	public final CountDownLatch executed = new CountDownLatch(1);

	private final String text;

	private final Duration delay;

	/**
	 * Delays the commit of the first statement that contains the text.
	 * @param text text of the statement's SQL
	 * @param delay how long after the statement returned it commits
	 */
	public SlowCommit(String text, Duration delay) {
		this.text = text;
		this.delay = delay;
	}

	/**
	 * Wraps a data source.
	 * @param target the data source
	 * @return a data source whose connections commit the statement late
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
			Object result = Proxies.invoke(target, method, args);
			if (result instanceof PreparedStatement statement && ((String) args[0]).contains(this.text)
					&& this.executed.getCount() > 0) {
				return statement(statement, target, self[0]);
			}
			return result;
		});
		return self[0];
	}

	private PreparedStatement statement(PreparedStatement target, Connection connection, Connection proxy) {
		return Proxies.proxy(PreparedStatement.class, (self, method, args) -> {
			if (method.getName().equals("getConnection")) {
				return proxy;
			}
			if (method.getName().startsWith("execute")) {
				connection.setAutoCommit(false);
				Object result = Proxies.invoke(target, method, args);
				this.executed.countDown();
				return result;
			}
			if (method.getName().equals("close") && this.executed.getCount() == 0 && !connection.getAutoCommit()) {
				Proxies.invoke(target, method, args);
				Thread.sleep(this.delay.toMillis());
				connection.commit();
				connection.setAutoCommit(true);
				return null;
			}
			return Proxies.invoke(target, method, args);
		});
	}

}
