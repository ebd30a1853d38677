package dev.leader.test;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.atomic.AtomicBoolean;

import javax.sql.DataSource;

/**
 * Data sources whose connections fail the first statement whose SQL contains a given
 * text, once, without sending it, as a statement fails whose session lives on (a query
 * timeout, a statement killed by the DBA): the connection and its server session stay as
 * they were.
 */
public final class FailOnce {

	private final String text;

	private final AtomicBoolean failed = new AtomicBoolean();

	/**
	 * Fails the first statement whose SQL contains the text.
	 * @param text the text
	 */
	public FailOnce(String text) {
		this.text = text;
	}

	/**
	 * Tells whether the statement has failed.
	 * @return whether it has
	 */
	public boolean failed() {
		return this.failed.get();
	}

	/**
	 * Wraps a data source.
	 * @param target the data source
	 * @return a data source whose connections fail the statement once
	 */
	public DataSource wrap(DataSource target) {
		return Proxies.proxy(DataSource.class, (proxy, method, args) -> {
			Object result = Proxies.invoke(target, method, args);
			return (result instanceof Connection connection) ? connection(connection) : result;
		});
	}

	private Connection connection(Connection target) {
		return Proxies.proxy(Connection.class, (proxy, method, args) -> {
			if (method.getName().startsWith("prepare") && ((String) args[0]).contains(this.text)
					&& this.failed.compareAndSet(false, true)) {
				throw new SQLException("Injected failure of: " + args[0]);
			}
			return Proxies.invoke(target, method, args);
		});
	}

}
