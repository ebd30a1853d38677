package dev.leader.test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import javax.sql.DataSource;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The committed fenced writes of a test, in commit order, and the check that fencing
 * held: per resource, no write of a lower term committed after a write of a higher term,
 * and the writes of one term came from one writer. A leader that was paused, lost its
 * lease and went on writing under its old term must have been rejected; if one of its
 * writes committed after its successor's first, the check names both.
 * <p>
 * The order of the writes must be their commit order. With the starter's guard it is the
 * order of ids that the write draws from a sequence after
 * {@link dev.leader.fencing.Fencing#guard guarding} (or in a
 * {@code @LeaderOnly(fenced = true)} transaction): a takeover waits until every guarded
 * transaction of the earlier term has ended, and the later term's writes guard only after
 * it, so they draw later ids. A {@code BIGSERIAL} or identity column filled by the
 * {@code INSERT} after the guard is such an id.
 * <p>
 * Immutable and thread-safe.
 */
public final class FencedWrites {

	private final List<Write> writes;

	private FencedWrites(List<Write> writes) {
		this.writes = List.copyOf(writes);
	}

	/**
	 * Creates the check over writes in commit order.
	 * @param writes the committed writes, in commit order
	 * @return the writes
	 */
	public static FencedWrites of(List<Write> writes) {
		return new FencedWrites(writes);
	}

	/**
	 * Reads the committed writes with a query whose rows are the writes in commit order,
	 * with the resource, the term and the writer as their first three columns; for
	 * example
	 * {@code SELECT 'settlement', term, node_id FROM settlement_batches ORDER BY id}.
	 * @param dataSource the database
	 * @param sql the query
	 * @return the writes
	 */
	public static FencedWrites read(DataSource dataSource, String sql) {
		return new FencedWrites(new JdbcTemplate(dataSource).query(sql,
				(row, number) -> new Write(row.getString(1), row.getLong(2), row.getString(3))));
	}

	/**
	 * Returns the writes, in commit order.
	 * @return the writes
	 */
	public List<Write> writes() {
		return this.writes;
	}

	/**
	 * Returns the writes of one writer, in commit order.
	 * @param writer the writer
	 * @return its writes
	 */
	public List<Write> writesOf(String writer) {
		return this.writes.stream().filter((write) -> write.writer().equals(writer)).toList();
	}

	/**
	 * Returns every violation of fencing, each described in a sentence: a write committed
	 * after a write of a higher term of the same resource, and a term of a resource
	 * written by a second writer.
	 * @return the violations, empty if fencing held
	 */
	public List<String> violations() {
		List<String> violations = new ArrayList<>();
		Map<String, Write> highest = new HashMap<>();
		Map<String, Write> firstOfTerm = new LinkedHashMap<>();
		for (Write write : this.writes) {
			Write before = highest.get(write.resource());
			if (before != null && write.term() < before.term()) {
				violations.add("Stale write committed: " + write + " after " + before);
			}
			else {
				highest.put(write.resource(), write);
			}
			Write first = firstOfTerm.putIfAbsent(write.resource() + "@" + write.term(), write);
			if (first != null && !first.writer().equals(write.writer())) {
				violations.add("Two writers under one term: " + first + " and " + write);
			}
		}
		return violations;
	}

	/**
	 * Asserts that fencing held, see {@link #violations()}.
	 * @return these writes
	 * @throws AssertionError naming every violation
	 */
	public FencedWrites assertNoStaleWriteCommitted() {
		List<String> violations = violations();
		if (!violations.isEmpty()) {
			throw new AssertionError(violations.size() + " fencing violations among " + this.writes.size()
					+ " committed writes:\n" + String.join("\n", violations));
		}
		return this;
	}

	/**
	 * Returns the highest term written to a resource.
	 * @param resource the resource
	 * @return the highest term, 0 if none was written
	 */
	public long highestTerm(String resource) {
		return this.writes.stream()
			.filter((write) -> write.resource().equals(resource))
			.mapToLong(Write::term)
			.max()
			.orElse(0);
	}

	@Override
	public String toString() {
		return this.writes.size() + " fenced writes";
	}

	/**
	 * One committed fenced write.
	 *
	 * @param resource what was written, for example a table, or the group whose lease
	 * fenced the write
	 * @param term the term, or generation, of the token the write was fenced with
	 * @param writer who wrote it, for example the node id
	 */
	public record Write(String resource, long term, String writer) {
	}

}
