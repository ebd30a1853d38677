package dev.leader.test;

import java.time.Duration;
import java.util.List;
import java.util.function.Consumer;
import java.util.regex.Pattern;

import javax.sql.DataSource;

import dev.leader.FencingToken;
import dev.leader.Leadership;
import dev.leader.fencing.Fencing;
import dev.leader.fencing.FencingStore;
import dev.leader.log.DecisionLog;
import dev.leader.log.LogStore;
import dev.leader.test.NodeEvent.Type;
import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Fenced appends of a {@link TestNode} to a log table,
 * {@code (group_name, term, node, incarnation, seq, stamp_nanos)}, shared by
 * {@link FencedWriter} and {@link GuardedLoad}. Each append is one transaction that
 * {@link Fencing#guard guards} the group's lease, may hold the transaction open for a
 * while ({@code pg_sleep}, or {@code SLEEP} on MariaDB), and then inserts the row, with
 * {@code stamp_nanos} taken after the guard passed and before the commit. With the
 * decision log, the transaction is fenced by an append to the group's decision log
 * instead of the guard, with the payload {@code <incarnation>/<seq>}, so that the row and
 * the entry commit together or not at all. With the fences table, the transaction
 * {@link Fencing#advance advances} the fence of a resource named after the group instead,
 * as an application whose leases are kept elsewhere (etcd) fences its writes.
 * Thread-safe.
 */
final class FencedLog {

	private static final Pattern TABLE_NAME = Pattern.compile("[a-z_][a-z0-9_]{0,62}");

	private final Leadership leadership;

	private final Fencing fencing;

	private final TransactionTemplate transactions;

	private final JdbcTemplate jdbc;

	private final String insertSql;

	private final String sleepSql;

	private final long incarnation;

	private final Consumer<NodeEvent> events;

	private final @Nullable DecisionLog decisions;

	private final boolean fences;

	FencedLog(Leadership leadership, DataSource dataSource, FencingStore fencingStore, @Nullable LogStore logStore,
			boolean fences, String sleepSql, Duration queryTimeout, String table, long incarnation,
			Consumer<NodeEvent> events) {
		if (!TABLE_NAME.matcher(table).matches()) {
			throw new IllegalArgumentException("Invalid log table name '" + table + "'");
		}
		this.leadership = leadership;
		this.fencing = new Fencing(fencingStore, leadership.nodeId());
		this.transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
		this.jdbc = new JdbcTemplate(dataSource);
		this.jdbc.setQueryTimeout((int) Math.max(1, queryTimeout.toSeconds()));
		this.insertSql = "INSERT INTO " + table
				+ " (group_name, term, node, incarnation, seq, stamp_nanos) VALUES (?, ?, ?, ?, ?, ?)";
		this.sleepSql = sleepSql;
		this.incarnation = incarnation;
		this.events = events;
		this.decisions = (logStore != null) ? new DecisionLog(logStore, leadership.nodeId(), List.of()) : null;
		this.fences = fences;
	}

	/**
	 * Returns the leadership whose tokens the appends are made under.
	 * @return the leadership
	 */
	Leadership leadership() {
		return this.leadership;
	}

	/**
	 * Appends a row under a token.
	 * @param token the token to guard
	 * @param seq the attempt's number
	 * @param hold how long to hold the transaction open after the guard, or {@code null}
	 * not to
	 * @throws dev.leader.StaleLeadershipException if the guard, the decision log or the
	 * fence rejects the token
	 */
	void append(FencingToken token, long seq, @Nullable Duration hold) {
		this.transactions.executeWithoutResult((status) -> {
			if (this.decisions != null) {
				this.decisions.append(token, "write", this.incarnation + "/" + seq);
			}
			else if (this.fences) {
				this.fencing.advance(token.group(), token);
			}
			else {
				this.fencing.guard(token);
			}
			if (hold != null) {
				this.jdbc.queryForObject(this.sleepSql, Integer.class, hold.toNanos() / 1e9);
			}
			long stamp = System.nanoTime();
			this.jdbc.update(this.insertSql, token.group(), token.term(), this.leadership.nodeId(), this.incarnation,
					seq, stamp);
		});
	}

	/**
	 * Prints an event of this node about a token.
	 * @param type the event's type
	 * @param token the token
	 */
	void print(Type type, FencingToken token) {
		this.events.accept(
				new NodeEvent(System.nanoTime(), type, token.group(), token.term(), this.leadership.nodeId(), null));
	}

}
