package dev.leader.postgres;

import java.sql.Array;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

import dev.leader.daemon.Assignment;
import dev.leader.daemon.AssignmentState;
import dev.leader.daemon.DaemonRequest;
import dev.leader.daemon.DaemonSnapshot;
import dev.leader.daemon.Member;
import dev.leader.jdbc.Statements;
import org.jspecify.annotations.Nullable;

/**
 * The rows of a {@link DaemonSnapshot}, in the row layout of the heartbeat statement of
 * {@link PostgresCoordinationStore}, so that the snapshot can be read in that statement
 * as well as on its own by {@link PostgresDaemonStore#read}. Each row has a {@code kind},
 * and every column of the layout, {@code NULL} where the kind has no value; the first
 * branch of the statement's {@code UNION ALL} names and types them all. This class reads,
 * by kind:
 * <ul>
 * <li>{@code N}, a node: {@code node_id}, {@code heartbeat_age_ms}, {@code daemons},
 * {@code drained}, {@code session_pid} ({@code Statements.NODE_SESSION});</li>
 * <li>{@code A}, an assignment: {@code daemon_name}, {@code node_id}, {@code state},
 * {@code generation}, {@code term}, {@code state_since};</li>
 * <li>{@code Q}, a request: {@code request_kind}, {@code daemon_name}, {@code node_id},
 * {@code requested_at};</li>
 * <li>{@code T}, the database clock {@code db_now}, once.</li>
 * </ul>
 * Rows of other kinds are the heartbeat's own, and are ignored.
 */
final class DaemonRows {

	/**
	 * The assignment, request and clock rows, to follow a {@code UNION ALL} whose first
	 * branch names the columns; the node rows are the caller's. Columns: kind,
	 * group_name, holder, term, expires_at, remaining_ms, node_id, name, host, pid,
	 * started_at, heartbeat_at, heartbeat_age_ms, daemons, drained, daemon_name, state,
	 * generation, state_since, request_kind, requested_at, db_now, log_index, base_url,
	 * zone, log_term, session_pid.
	 */
	static final String ASSIGNMENTS_REQUESTS_AND_CLOCK = """
			SELECT 'A', NULL, NULL, term, NULL, NULL,
			       node_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
			       daemon_name, state, generation, state_since, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
			FROM ${prefix}assignments
			UNION ALL
			SELECT 'Q', NULL, NULL, NULL, NULL, NULL,
			       node_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
			       daemon_name, NULL, NULL, NULL, kind, requested_at, NULL, NULL, NULL, NULL, NULL, NULL
			FROM ${prefix}daemon_requests
			UNION ALL
			SELECT 'T', NULL, NULL, NULL, NULL, NULL,
			       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
			       NULL, NULL, NULL, NULL, NULL, NULL, clock_timestamp(), NULL, NULL, NULL, NULL, NULL
			""";

	private final Duration nodeExpiry;

	private final List<Member> members = new ArrayList<>();

	private final List<Assignment> assignments = new ArrayList<>();

	private final List<DaemonRequest> requests = new ArrayList<>();

	private @Nullable Instant now;

	DaemonRows(Duration nodeExpiry) {
		this.nodeExpiry = nodeExpiry;
	}

	void add(ResultSet rows) throws SQLException {
		switch (rows.getString("kind")) {
			case "N" -> this.members.add(new Member(rows.getString("node_id"), daemons(rows.getArray("daemons")),
					rows.getLong("heartbeat_age_ms") < this.nodeExpiry.toMillis() && !sessionEnded(rows),
					rows.getBoolean("drained")));
			case "A" -> this.assignments.add(new Assignment(rows.getString("daemon_name"), rows.getString("node_id"),
					AssignmentState.valueOf(rows.getString("state")), rows.getLong("generation"), rows.getLong("term"),
					Statements.instant(rows, "state_since")));
			case "Q" -> this.requests.add(new DaemonRequest(DaemonRequest.Kind.valueOf(rows.getString("request_kind")),
					rows.getString("daemon_name"), rows.getString("node_id"),
					Statements.instant(rows, "requested_at")));
			case "T" -> this.now = Statements.instant(rows, "db_now");
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
	 * Returns whether a node row says that the session its node is bound to ended, so
	 * that the node is dead whatever its last heartbeat
	 * ({@code Statements.NODE_SESSION}).
	 * @param rows the result set, on a node row
	 * @return whether the node's session ended
	 * @throws SQLException if the column cannot be read
	 */
	static boolean sessionEnded(ResultSet rows) throws SQLException {
		return rows.getLong("session_pid") == 0 && !rows.wasNull();
	}

	private static Set<String> daemons(@Nullable Array array) throws SQLException {
		return (array != null) ? Set.copyOf(Arrays.asList((String[]) array.getArray())) : Set.of();
	}

}
