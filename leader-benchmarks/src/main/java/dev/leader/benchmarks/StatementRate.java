package dev.leader.benchmarks;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A statement and how often the sample application's nodes sent it, from the server log
 * ({@link #fromServerLog}) or from samples of {@code pg_stat_activity}
 * ({@link #fromCounts}).
 *
 * @param text the statement, whitespace collapsed, cut at 120 characters
 * @param perSecond all nodes together
 * @param perNode by node name
 */
record StatementRate(String text, double perSecond, Map<String, Double> perNode) {

	private static final Pattern LOG_RECORD = Pattern
		.compile("^\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\.\\d+ \\S+ \\[(\\d+)\\] (\\S*)@(\\S*) (.*)$");

	private static final Pattern LOGGED_STATEMENT = Pattern
		.compile("LOG:  duration: [0-9.]+ ms  (?:statement|execute [^:]*): (.*)", Pattern.DOTALL);

	/**
	 * Groups the statements the server logged for the nodes' sessions by their text, with
	 * their rates per node.
	 * @param log the server log's lines written during the measurement
	 * @param database the name of the nodes' database
	 * @param sessions the application name of each session, by backend process id
	 * @param leader the name of the leading node
	 * @param seconds the length of the measurement, in seconds
	 * @return the statements' rates, most frequent first
	 */
	static List<StatementRate> fromServerLog(String log, String database, Map<Integer, String> sessions, String leader,
			double seconds) {
		Map<String, Map<String, Integer>> counts = new TreeMap<>();
		for (Map.Entry<Integer, String> record : records(log, database)) {
			Matcher statement = LOGGED_STATEMENT.matcher(record.getValue());
			String node = sessions.get(record.getKey());
			if (!statement.matches() || node == null) {
				continue;
			}
			String text = statement.group(1).replaceAll("\\s+", " ").trim();
			text = text.isEmpty() ? "(empty query)" : text.substring(0, Math.min(text.length(), 120));
			counts.computeIfAbsent(text, (key) -> new TreeMap<>()).merge(node, 1, Integer::sum);
		}
		return fromCounts(counts, leader, seconds);
	}

	/**
	 * Splits the server log into its records of the given database, each with the backend
	 * process id that wrote it; a record's continuation lines belong to it.
	 * @param log the server log's lines
	 * @param database the database
	 * @return the records, in order
	 */
	private static List<Map.Entry<Integer, String>> records(String log, String database) {
		List<Map.Entry<Integer, String>> records = new ArrayList<>();
		Integer pid = null;
		StringBuilder message = null;
		for (String line : log.split("\n")) {
			Matcher record = LOG_RECORD.matcher(line);
			if (record.matches()) {
				if (pid != null) {
					records.add(Map.entry(pid, message.toString()));
				}
				pid = database.equals(record.group(3)) ? Integer.valueOf(record.group(1)) : null;
				message = new StringBuilder(record.group(4));
			}
			else if (pid != null) {
				message.append('\n').append(line);
			}
		}
		if (pid != null) {
			records.add(Map.entry(pid, message.toString()));
		}
		return records;
	}

	/**
	 * Turns counts by statement and node into rates, the nodes' statements only, most
	 * frequent first.
	 * @param counts the counts, by statement text and then application name
	 * @param leader the name of the leading node
	 * @param seconds the length of the measurement, in seconds
	 * @return the statements' rates, most frequent first
	 */
	static List<StatementRate> fromCounts(Map<String, Map<String, Integer>> counts, String leader, double seconds) {
		List<StatementRate> rates = new ArrayList<>();
		counts.forEach((text, byNode) -> {
			Map<String, Double> perNode = new TreeMap<>();
			byNode.forEach((node, count) -> {
				if (node.startsWith("node-")) {
					perNode.put(node.equals(leader) ? node + " (leader)" : node, count / seconds);
				}
			});
			if (perNode.isEmpty()) {
				return;
			}
			rates.add(
					new StatementRate(text, perNode.values().stream().mapToDouble(Double::doubleValue).sum(), perNode));
		});
		rates.sort((a, b) -> Double.compare(b.perSecond(), a.perSecond()));
		return rates;
	}

}
