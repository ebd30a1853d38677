package dev.leader.test;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;

import javax.sql.DataSource;

import org.jspecify.annotations.Nullable;

/**
 * A {@link DataSource} that records every statement executed through it: its SQL, the
 * {@link System#nanoTime()} at which it was sent and at which it returned, and whether it
 * failed. It counts what a node asks of the database, independently of timing and of
 * anything else that shares the server, so tests can assert on load ("one statement per
 * renew interval") rather than measure it.
 * <p>
 * Only the {@code execute…} methods of statements obtained from its connections are
 * recorded; batches are not (the stores use none).
 */
public final class CountingDataSource {

	private final DataSource target;

	private final DataSource proxy;

	private final List<Execution> executions = new CopyOnWriteArrayList<>();

	/**
	 * Creates a counting data source around another one.
	 * @param target the data source that runs the statements
	 */
	public CountingDataSource(DataSource target) {
		this.target = target;
		this.proxy = Proxies.proxy(DataSource.class, (p, method, args) -> {
			Object result = Proxies.invoke(this.target, method, args);
			return (result instanceof Connection connection) ? connection(connection) : result;
		});
	}

	/**
	 * Returns the data source to hand to the code under test.
	 * @return the counting data source
	 */
	public DataSource dataSource() {
		return this.proxy;
	}

	/**
	 * Returns the executions recorded so far, in the order they were sent.
	 * @return a snapshot
	 */
	public List<Execution> executions() {
		return List.copyOf(this.executions);
	}

	/**
	 * Returns the executions recorded since a mark.
	 * @param mark a value of {@link #mark()}
	 * @return the executions sent after the mark was taken
	 */
	public List<Execution> since(int mark) {
		List<Execution> snapshot = executions();
		return snapshot.subList(Math.min(mark, snapshot.size()), snapshot.size());
	}

	/**
	 * Returns a mark for {@link #since(int)}: the number of executions recorded so far.
	 * @return the mark
	 */
	public int mark() {
		return this.executions.size();
	}

	private Connection connection(Connection connection) {
		return Proxies.proxy(Connection.class, (p, method, args) -> {
			Object result = Proxies.invoke(connection, method, args);
			if (result instanceof Statement statement) {
				String sql = (method.getName().startsWith("prepare") && args != null && args[0] instanceof String text)
						? text : null;
				Class<? extends Statement> type = (result instanceof PreparedStatement) ? PreparedStatement.class
						: Statement.class;
				return statement(type, statement, sql);
			}
			return result;
		});
	}

	private <S extends Statement> S statement(Class<S> type, Statement statement, @Nullable String preparedSql) {
		return type.cast(Proxies.proxy(type, (p, method, args) -> {
			if (!method.getName().startsWith("execute") || method.getName().equals("executeBatch")) {
				return Proxies.invoke(statement, method, args);
			}
			String sql = (args != null && args.length > 0 && args[0] instanceof String text) ? text : preparedSql;
			long sent = System.nanoTime();
			try {
				Object result = Proxies.invoke(statement, method, args);
				this.executions.add(new Execution(String.valueOf(sql), sent, System.nanoTime(),
						Thread.currentThread().getName(), null));
				return result;
			}
			catch (Throwable ex) {
				this.executions.add(new Execution(String.valueOf(sql), sent, System.nanoTime(),
						Thread.currentThread().getName(), ex));
				throw ex;
			}
		}));
	}

	/**
	 * One statement execution.
	 *
	 * @param sql the statement's SQL
	 * @param sentAt the {@link System#nanoTime()} at which it was sent
	 * @param returnedAt the {@link System#nanoTime()} at which its reply had been read,
	 * or its failure thrown
	 * @param thread the name of the thread that sent it
	 * @param failure what it threw, or {@code null} if it succeeded
	 */
	public record Execution(String sql, long sentAt, long returnedAt, String thread, @Nullable Throwable failure) {

		/**
		 * Returns whether the statement's SQL contains the given text.
		 * @param text the text
		 * @return whether it does
		 */
		public boolean contains(String text) {
			return this.sql.contains(text);
		}

		/**
		 * Returns a predicate on executions whose SQL contains the given text.
		 * @param text the text
		 * @return the predicate
		 */
		public static Predicate<Execution> containing(String text) {
			return (execution) -> execution.contains(text);
		}

	}

}
