package dev.leader.postgres;

import dev.leader.jdbc.TablePrefix;

/**
 * The statements of {@link PostgresDaemonStore}, as templates in the placeholder syntax
 * of the migrations ({@code ${prefix}}, see {@link TablePrefix#render}), and rendered
 * once for a store's table prefix. Each is one statement, so one transaction: a
 * transition is atomic and compares and sets the daemon's generation and state, and every
 * time in it is the database's {@code clock_timestamp()}. Each statement that changes
 * something notifies the assignments channel, its last parameter, in the same statement,
 * so the notification is sent only if it commits.
 *
 * @param read see {@link #READ}
 * @param assign see {@link #ASSIGN}
 * @param revoke see {@link #REVOKE}
 * @param reclaim see {@link #RECLAIM}
 * @param acknowledge see {@link #ACKNOWLEDGE}
 * @param release see {@link #RELEASE}
 * @param request see {@link #REQUEST}
 * @param drain see {@link #DRAIN}
 * @param forget see {@link #FORGET}
 * @param lock see {@link #LOCK}
 */
record DaemonSql(String read, String assign, String revoke, String reclaim, String acknowledge, String release,
		String request, String drain, String forget, String lock) {

	/**
	 * Reads the nodes, assignments and requests, and the database clock, in the row
	 * layout of {@link DaemonRows}.
	 */
	static final String READ = """
			SELECT 'N' AS kind, NULL::varchar AS group_name, NULL::varchar AS holder, NULL::bigint AS term,
			       NULL::timestamptz AS expires_at, NULL::bigint AS remaining_ms,
			       node_id, NULL::varchar AS name, NULL::varchar AS host, NULL::bigint AS pid,
			       NULL::timestamptz AS started_at, NULL::timestamptz AS heartbeat_at,
			       ${heartbeat_age_ms} AS heartbeat_age_ms, daemons, drained,
			       NULL::varchar AS daemon_name, NULL::varchar AS state, NULL::bigint AS generation,
			       NULL::timestamptz AS state_since, NULL::varchar AS request_kind, NULL::timestamptz AS requested_at,
			       NULL::timestamptz AS db_now, NULL::bigint AS log_index, base_url, zone, NULL::bigint AS log_term,
			       ${node_session} AS session_pid
			FROM ${prefix}nodes
			UNION ALL
			""" + DaemonRows.ASSIGNMENTS_REQUESTS_AND_CLOCK;

	/**
	 * The leader's lease, locked as the lease guard locks it: FOR KEY SHARE, which a
	 * takeover waits for and the leader's own renewal does not. The leader's statements
	 * start with it, and change nothing unless it was found. Their commit is
	 * {@linkplain Statements#DURABLE durable}, as a grant's is: an assignment hands out a
	 * generation, the daemon's fencing token, and a node starts the daemon once notified.
	 */
	static final String LEASE = """
			WITH lease AS (
			  SELECT 1 FROM ${prefix}leases l, (SELECT ${durable}) AS durable
			  WHERE l.group_name = ? AND l.holder = ? AND l.term = ? AND l.expires_at > clock_timestamp()
			    AND l.term > (SELECT ${epoch_base})
			  FOR KEY SHARE OF l
			)
			""";

	/**
	 * Assigns a daemon. The move request an assignment carries out is deleted in the same
	 * statement, only if the assignment was made. A generation is a fencing token too:
	 * like a term, it is at least the first of the server's epoch, so that it rises
	 * across a promotion that lost the old primary's last assignments.
	 */
	static final String ASSIGN = LEASE + """
			, assigned AS (
			  INSERT INTO ${prefix}assignments AS a (daemon_name, node_id, state, generation, term, assigned_at,
			    state_since)
			  SELECT ?, ?, 'ASSIGNING', (SELECT ${epoch_base}) + 1, ?, clock_timestamp(), clock_timestamp() FROM lease
			  ON CONFLICT (daemon_name) DO UPDATE SET node_id = excluded.node_id, state = 'ASSIGNING',
			    generation = greatest(a.generation + 1, excluded.generation), term = excluded.term,
			    assigned_at = excluded.assigned_at,
			    acked_at = NULL, revoking_at = NULL, deleted_at = NULL, state_since = excluded.state_since
			  WHERE a.state = 'DELETED' AND a.generation = ?
			  RETURNING a.generation, a.node_id
			), consumed AS (
			  DELETE FROM ${prefix}daemon_requests
			  WHERE kind = 'MOVE' AND daemon_name = ? AND requested_at = ?::timestamptz
			    AND EXISTS (SELECT 1 FROM assigned)
			)
			SELECT generation, pg_notify(?, node_id) AS notified FROM assigned
			""";

	static final String REVOKE = LEASE + """
			, changed AS (
			  UPDATE ${prefix}assignments SET state = 'REVOKING', term = ?, revoking_at = clock_timestamp(),
			    state_since = clock_timestamp()
			  WHERE daemon_name = ? AND generation = ? AND state IN ('ASSIGNING', 'ACTIVE')
			    AND EXISTS (SELECT 1 FROM lease)
			  RETURNING node_id
			)
			SELECT pg_notify(?, node_id) AS notified FROM changed
			""";

	/**
	 * Ends an assignment on the leader's behalf, if it is still in the state the leader
	 * read. Ending an assignment (DELETED) locks its row FOR UPDATE first, which waits
	 * for the transactions that the daemon guard locked FOR KEY SHARE, and for an
	 * acknowledgement in progress, whose new state it then checks again; a revoke and an
	 * acknowledgement change neither node nor generation, and wait for no guard.
	 */
	static final String RECLAIM = LEASE + """
			, target AS (
			  SELECT daemon_name, ?::bigint AS term FROM ${prefix}assignments
			  WHERE daemon_name = ? AND generation = ? AND state = ? AND state <> 'DELETED'
			    AND EXISTS (SELECT 1 FROM lease)
			  FOR UPDATE
			), changed AS (
			  UPDATE ${prefix}assignments a SET state = 'DELETED', term = target.term, deleted_at = clock_timestamp(),
			    state_since = clock_timestamp()
			  FROM target WHERE a.daemon_name = target.daemon_name
			  RETURNING a.node_id
			)
			SELECT pg_notify(?, node_id) AS notified FROM changed
			""";

	/**
	 * Acknowledges an assignment, durably: the node starts the agent once it succeeded,
	 * and an acknowledgement lost in a crash or a failover would let the leader reclaim
	 * the running daemon at the ack timeout. A node whose bound session ended
	 * ({@code Statements.NODE_SESSION}) acknowledges nothing: every node counts it dead.
	 */
	static final String ACKNOWLEDGE = """
			WITH changed AS (
			  UPDATE ${prefix}assignments a SET state = 'ACTIVE', acked_at = clock_timestamp(),
			    state_since = clock_timestamp()
			  WHERE a.daemon_name = ? AND a.generation = ? AND a.node_id = ? AND a.state = 'ASSIGNING'
			    AND NOT EXISTS (SELECT 1 FROM ${prefix}nodes WHERE node_id = a.node_id AND ${node_session} = 0)
			  RETURNING a.node_id
			)
			SELECT pg_notify(?, '') AS notified FROM changed, (SELECT ${durable}) AS durable
			""";

	/**
	 * Hands an assignment back; like a reclaim, it locks the row FOR UPDATE first.
	 */
	static final String RELEASE = """
			WITH target AS (
			  SELECT daemon_name FROM ${prefix}assignments
			  WHERE daemon_name = ? AND generation = ? AND node_id = ? AND state <> 'DELETED'
			  FOR UPDATE
			), changed AS (
			  UPDATE ${prefix}assignments a SET state = 'DELETED', deleted_at = clock_timestamp(),
			    state_since = clock_timestamp()
			  FROM target WHERE a.daemon_name = target.daemon_name
			  RETURNING a.node_id
			)
			SELECT pg_notify(?, '') AS notified FROM changed
			""";

	static final String REQUEST = """
			WITH recorded AS (
			  INSERT INTO ${prefix}daemon_requests (kind, daemon_name, node_id, requested_at)
			  VALUES (?, ?, ?, clock_timestamp())
			  ON CONFLICT (kind, daemon_name) DO UPDATE SET node_id = excluded.node_id,
			    requested_at = excluded.requested_at
			  RETURNING kind, daemon_name, node_id, requested_at
			)
			SELECT kind, daemon_name, node_id, requested_at, pg_notify(?, '') AS notified FROM recorded
			""";

	static final String DRAIN = """
			WITH changed AS (
			  UPDATE ${prefix}nodes SET drained = ? WHERE node_id = ? RETURNING node_id
			)
			SELECT pg_notify(?, '') AS notified FROM changed
			""";

	static final String FORGET = LEASE + """
			, forgotten AS (
			  DELETE FROM ${prefix}daemon_requests
			  WHERE kind = ? AND daemon_name = ? AND requested_at = ? AND EXISTS (SELECT 1 FROM lease)
			  RETURNING 1
			)
			SELECT count(*) AS forgotten FROM forgotten
			""";

	/**
	 * The daemon guard: locks the assignment row FOR KEY SHARE in the caller's
	 * transaction, and limits the rest of that transaction as the lease guard does (see
	 * {@link PostgresFencingStore}).
	 */
	static final String LOCK = """
			SELECT daemon_name, node_id, state, generation, term, state_since, ${hold_limits} AS limits
			FROM ${prefix}assignments, ${hold} WHERE daemon_name = ? FOR KEY SHARE OF ${prefix}assignments
			""";

	/**
	 * Renders the statements.
	 * @param prefix the validated table prefix
	 */
	DaemonSql(TablePrefix prefix) {
		this(prefix.render(READ), prefix.render(ASSIGN), prefix.render(REVOKE), prefix.render(RECLAIM),
				prefix.render(ACKNOWLEDGE), prefix.render(RELEASE), prefix.render(REQUEST), prefix.render(DRAIN),
				prefix.render(FORGET), prefix.render(LOCK));
	}

}
