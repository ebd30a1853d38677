package dev.leader.mariadb;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import dev.leader.daemon.Assignment;
import dev.leader.daemon.AssignmentState;
import dev.leader.daemon.DaemonRequest;
import dev.leader.daemon.DaemonSnapshot;
import dev.leader.daemon.Member;
import org.jspecify.annotations.Nullable;

/**
 * The rows of a {@link DaemonSnapshot} on MariaDB, read by
 * {@link MariaDbDaemonStore#read} on their own and by {@link MariaDbHeartbeat} with the
 * heartbeat's rows. Each row has a {@code kind}; this class reads:
 * <ul>
 * <li>{@code N}, a node: {@code node_id}, {@code daemons} (names separated by spaces),
 * {@code drained}, {@code heartbeat_age_ms}, {@code session_id}
 * ({@link MariaDbSql#NODE_SESSION});</li>
 * <li>{@code A}, an assignment: {@code daemon_name}, {@code node_id}, {@code state},
 * {@code generation}, {@code term}, {@code since};</li>
 * <li>{@code Q}, a request: {@code request_kind}, {@code daemon_name}, {@code node_id},
 * {@code since};</li>
 * <li>{@code T}, the database clock in {@code since}, once.</li>
 * </ul>
 * Rows of other kinds are ignored.
 */
final class MariaDbDaemonRows {

	/**
	 * The assignment, request and clock branches of a {@code UNION ALL} whose first
	 * branch names the columns: kind, group_name, holder, term, expires_at, remaining_ms,
	 * node_id, name, host, pid, started_at, heartbeat_at, heartbeat_age_ms, base_url,
	 * zone, log_index, log_term, session_id, daemons, drained, daemon_name, state,
	 * generation, since, request_kind ({@link MariaDbHeartbeat}).
	 */
	static final String ASSIGNMENTS_REQUESTS_AND_CLOCK = """
			UNION ALL
			SELECT 'A', NULL, NULL, term, NULL, NULL, node_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
			       NULL, NULL, NULL, NULL, daemon_name, state, generation, state_since, NULL
			FROM ${prefix}assignments
			UNION ALL
			SELECT 'Q', NULL, NULL, NULL, NULL, NULL, node_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
			       NULL, NULL, NULL, NULL, daemon_name, NULL, NULL, requested_at, kind
			FROM ${prefix}daemon_requests
			UNION ALL
			SELECT 'T', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
			       NULL, NULL, NULL, NULL, NULL, NULL, NULL, ${now}, NULL""";

	private final Duration nodeExpiry;

	private final List<Member> members = new ArrayList<>();

	private final List<Assignment> assignments = new ArrayList<>();

	private final List<DaemonRequest> requests = new ArrayList<>();

	private @Nullable Instant now;

	MariaDbDaemonRows(Duration nodeExpiry) {
		this.nodeExpiry = nodeExpiry;
	}

	void add(ResultSet rows) throws SQLException {
		switch (rows.getString("kind")) {
			case "N" -> this.members.add(new Member(rows.getString("node_id"), daemons(rows.getString("daemons")),
					rows.getLong("heartbeat_age_ms") < this.nodeExpiry.toMillis() && !MariaDbSql.sessionEnded(rows),
					rows.getBoolean("drained")));
			case "A" -> this.assignments.add(assignment(rows, AssignmentState.valueOf(rows.getString("state"))));
			case "Q" -> this.requests.add(new DaemonRequest(DaemonRequest.Kind.valueOf(rows.getString("request_kind")),
					rows.getString("daemon_name"), rows.getString("node_id"),
					MariaDbConnections.instant(rows, "since")));
			case "T" -> this.now = MariaDbConnections.instant(rows, "since");
			default -> {
			}
		}
	}

	DaemonSnapshot snapshot() {
		if (this.now == null) {
			throw new IllegalStateException("The read of assignments returned no clock row");
		}
		return new DaemonSnapshot(this.now, this.members, this.assignments, this.requests);
	}

	/**
	 * Reads an assignment from a row with {@code daemon_name}, {@code node_id},
	 * {@code generation}, {@code term} and {@code since}.
	 * @param rows the rows, on the row to read
	 * @param state the assignment's state
	 * @return the assignment, at the epoch where the row has no time
	 * @throws SQLException if a column cannot be read
	 */
	static Assignment assignment(ResultSet rows, AssignmentState state) throws SQLException {
		Instant since = MariaDbConnections.instant(rows, "since");
		return new Assignment(rows.getString("daemon_name"), rows.getString("node_id"), state,
				rows.getLong("generation"), rows.getLong("term"), (since != null) ? since : Instant.EPOCH);
	}

	private static Set<String> daemons(@Nullable String daemons) {
		return (daemons == null || daemons.isEmpty()) ? Set.of() : Set.of(daemons.split(" "));
	}

}
