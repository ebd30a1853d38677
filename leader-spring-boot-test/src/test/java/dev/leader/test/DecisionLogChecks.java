package dev.leader.test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import javax.sql.DataSource;

import org.springframework.jdbc.core.simple.JdbcClient;

/**
 * Checks the decision logs that the fenced writers of a fault run appended to (each write
 * fenced by an append in its own transaction, see {@link FencedLog}): per group, the
 * indexes run from 1 with no gap, the terms never fall as the index rises (no entry of an
 * old term after the first entry of a newer one), and the entries are exactly the
 * committed writes, each under the write's term.
 */
public final class DecisionLogChecks {

	private DecisionLogChecks() {
	}

	/**
	 * Returns what the logs violate.
	 * @param dataSource the cluster's database
	 * @param writeTable the table of the fenced writes
	 * @return the violations, empty if none
	 */
	public static List<String> violations(DataSource dataSource, String writeTable) {
		JdbcClient jdbc = JdbcClient.create(dataSource);
		Map<String, Long> writes = new HashMap<>();
		jdbc.sql("SELECT group_name, term, incarnation, seq FROM " + writeTable)
			.query((row, number) -> writes.put(
					row.getString("group_name") + " " + row.getLong("incarnation") + "/" + row.getLong("seq"),
					row.getLong("term")))
			.list();
		List<String> violations = new ArrayList<>();
		Map<String, long[]> last = new HashMap<>();
		jdbc.sql("SELECT group_name, log_index, term, payload FROM leader_log_entries ORDER BY group_name, log_index")
			.query((row, number) -> {
				String group = row.getString("group_name");
				long index = row.getLong("log_index");
				long term = row.getLong("term");
				long[] previous = last.getOrDefault(group, new long[] { 0, 0 });
				if (index != previous[0] + 1) {
					violations.add("log of " + group + " goes from index " + previous[0] + " to " + index);
				}
				if (term < previous[1]) {
					violations.add("log of " + group + " has term " + term + " at index " + index + " after term "
							+ previous[1]);
				}
				last.put(group, new long[] { index, term });
				Long written = writes.remove(group + " " + row.getString("payload"));
				if (written == null) {
					violations.add("entry " + index + " of " + group + " (" + row.getString("payload")
							+ ") has no committed write");
				}
				else if (written != term) {
					violations.add("entry " + index + " of " + group + " has term " + term + ", its write " + written);
				}
				return index;
			})
			.list();
		writes.keySet().forEach((write) -> violations.add("write " + write + " has no log entry"));
		return violations;
	}

	/**
	 * Returns how many entries the logs hold.
	 * @param dataSource the cluster's database
	 * @return the number of entries
	 */
	public static long entries(DataSource dataSource) {
		return JdbcClient.create(dataSource).sql("SELECT count(*) FROM leader_log_entries").query(Long.class).single();
	}

}
