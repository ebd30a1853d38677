package dev.leader.jdbc;

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
import org.jspecify.annotations.Nullable;

/**
 * The rows of a {@link DaemonSnapshot}, in the column layout of the heartbeat statement of
 * {@link PostgresCoordinationStore}, so that the snapshot can be read in that statement as well as on its own by
 * {@link PostgresDaemonStore#read}. Columns, by kind of row in column 1:
 * <ul>
 * <li>{@code N}, a node: id (2), heartbeat age in milliseconds (6), daemons (9), drained (10);</li>
 * <li>{@code A}, an assignment: daemon (2), node (3), generation (4), since (5), term (6), state (7);</li>
 * <li>{@code Q}, a request: daemon (2), node (3), requested at (5), kind (7);</li>
 * <li>{@code T}, the database clock (5), once.</li>
 * </ul>
 * Rows of other kinds are the heartbeat's own, and are ignored.
 */
final class DaemonRows {

	private final Duration nodeExpiry;

	private final List<Member> members = new ArrayList<>();

	private final List<Assignment> assignments = new ArrayList<>();

	private final List<DaemonRequest> requests = new ArrayList<>();

	private @Nullable Instant now;

	DaemonRows(Duration nodeExpiry) {
		this.nodeExpiry = nodeExpiry;
	}

	/**
	 * Returns the assignment, request and clock rows, to follow a {@code UNION ALL}; the node rows are the caller's.
	 * @param prefix the validated table prefix
	 * @return the SQL
	 */
	static String assignmentsRequestsAndClock(String prefix) {
		return """
				SELECT 'A', daemon_name, node_id, generation, state_since, term, state, NULL::timestamptz,
				       NULL::varchar[], NULL::boolean
				FROM %1$sassignments
				UNION ALL
				SELECT 'Q', daemon_name, node_id, NULL::bigint, requested_at, NULL::bigint, kind, NULL::timestamptz,
				       NULL::varchar[], NULL::boolean
				FROM %1$sdaemon_requests
				UNION ALL
				SELECT 'T', NULL::varchar, NULL::varchar, NULL::bigint, clock_timestamp(), NULL::bigint, NULL::varchar,
				       NULL::timestamptz, NULL::varchar[], NULL::boolean
				""".formatted(prefix);
	}

	void add(ResultSet rows) throws SQLException {
		switch (rows.getString(1)) {
			case "N" -> this.members.add(new Member(rows.getString(2), daemons(rows.getArray(9)),
					rows.getLong(6) < this.nodeExpiry.toMillis(), rows.getBoolean(10)));
			case "A" -> this.assignments.add(new Assignment(rows.getString(2), rows.getString(3),
					AssignmentState.valueOf(rows.getString(7)), rows.getLong(4), rows.getLong(6),
					Statements.instant(rows, 5)));
			case "Q" -> this.requests.add(new DaemonRequest(DaemonRequest.Kind.valueOf(rows.getString(7)),
					rows.getString(2), rows.getString(3), Statements.instant(rows, 5)));
			case "T" -> this.now = Statements.instant(rows, 5);
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

	private static Set<String> daemons(@Nullable Array array) throws SQLException {
		return (array != null) ? Set.copyOf(Arrays.asList((String[]) array.getArray())) : Set.of();
	}

}
