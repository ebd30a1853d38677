package dev.leader.postgres;

import dev.leader.jdbc.TablePrefix;

/**
 * The statements of {@link PostgresCoordinationStore}, as templates in the placeholder
 * syntax of the migrations ({@code ${prefix}}, see {@link TablePrefix#render}), and
 * rendered once for a store's table prefix. Each is one statement, so one transaction: a
 * transition is atomic, and every time in it is the database's {@code clock_timestamp()}.
 *
 * @param acquire grants a lease or reads it, see {@link #ACQUIRE}
 * @param tick the heartbeat, see {@link #TICK}
 * @param tickWithDaemons the heartbeat that also reads the rows of {@link DaemonRows}
 * @param release releases leases, see {@link #RELEASE}
 * @param deregister deletes the node's row if it is still the incarnation's
 * @param leases reads every lease
 */
record CoordinationSql(String acquire, String tick, String tickWithDaemons, String release, String deregister,
		String leases) {

	/**
	 * Grants a lease, or reads it as it stands. Every grant is a new term, and locks the
	 * row FOR UPDATE first, which waits for every transaction that a guard of the old
	 * term locked FOR KEY SHARE (G3). That holds for a node that asks for a lease it
	 * already holds, too: the engine never does while it holds the lease, so such a
	 * request comes from a node that stepped down, or from another process that was
	 * started with the same node id, and the two must never share a term. The insert's
	 * source joins that lock, so it is taken before the upsert, and only when the lease
	 * is free, expired or this node's by the snapshot: an attempt on a lease that another
	 * node holds inserts nothing and locks nothing. The update is allowed only where the
	 * lock was taken, so a row that appeared after the snapshot is never taken over
	 * unlocked: that attempt is refused, and retried. A grant's term is at least the
	 * first of the server's epoch ({@code Statements.EPOCH_BASE}), so that terms keep
	 * rising across a promotion even when the old primary's last grants were lost with
	 * it. The commit is {@linkplain Statements#DURABLE durable}.
	 * <p>
	 * A lease bound to its holder's session ({@link PostgresSessions}) is free too once
	 * that session no longer holds the term's advisory lock: the holder's process died,
	 * or its session ended. The statement checks it in {@code pg_locks}, in the same
	 * snapshot as the rest, so a follower's belief that the holder died is never enough.
	 * Only for a term of the server's epoch: a lease bound before a promotion waits for
	 * its expiry, since the new primary never had that session. Every grant clears the
	 * binding.
	 * <p>
	 * Only the process that registered the node is granted: once the lease row is locked
	 * (or found missing), the statement refreshes the heartbeat of the node's row if it
	 * is still this incarnation's, and grants only if it did. The update locks that row,
	 * so a takeover of the id by another process either committed before it (the
	 * incarnation no longer matches, and nothing is granted) or waits for the grant and
	 * then finds the row fresh, and the registration refused. The update also records the
	 * lease's expiry in the row ({@code leases_until}), since a commit that is slower
	 * than the node expiry would leave the heartbeat it stamped stale. An attempt on a
	 * lease that another node holds touches no node row, and one on a lease held under
	 * the node's id (a grant again, after stepping down) goes on only if the row is this
	 * incarnation's, so that a process whose id another one took over locks none of that
	 * one's leases.
	 */
	static final String ACQUIRE = """
			WITH takeover AS (
			  SELECT group_name FROM ${prefix}leases s
			  WHERE group_name = ? AND (holder IS NULL OR expires_at <= clock_timestamp()
			    OR (holder = ? AND EXISTS (SELECT 1 FROM ${prefix}nodes WHERE node_id = ? AND incarnation = ?))
			    OR (session_pid IS NOT NULL AND s.term > ${epoch_base} AND NOT EXISTS (
			      SELECT 1 FROM pg_locks k WHERE k.locktype = 'advisory' AND k.granted AND k.pid = s.session_pid
			        AND k.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			        AND k.classid = ?::int::oid AND k.objid = (s.term & 2147483647)::int::oid AND k.objsubid = 2)))
			  FOR UPDATE OF s
			), me AS (
			  UPDATE ${prefix}nodes SET heartbeat_at = clock_timestamp(),
			    leases_until = greatest(leases_until, clock_timestamp() + ? * interval '1 millisecond')
			  WHERE node_id = ? AND incarnation = ?
			    AND (EXISTS (SELECT 1 FROM takeover) OR NOT EXISTS (SELECT 1 FROM ${prefix}leases WHERE group_name = ?))
			  RETURNING node_id
			), attempt AS (
			  INSERT INTO ${prefix}leases AS l (group_name, holder, term, acquired_at, renewed_at, expires_at)
			  SELECT ?, ?, epoch.base + 1, clock_timestamp(), clock_timestamp(),
			    clock_timestamp() + ? * interval '1 millisecond'
			  FROM (SELECT ${durable}) AS durable CROSS JOIN (SELECT ${epoch_base} AS base) AS epoch
			    LEFT JOIN takeover ON true
			  WHERE (takeover.group_name IS NOT NULL
			     OR NOT EXISTS (SELECT 1 FROM ${prefix}leases WHERE group_name = ?))
			    AND EXISTS (SELECT 1 FROM me)
			  ON CONFLICT (group_name) DO UPDATE SET term = greatest(l.term + 1, excluded.term),
			    holder = excluded.holder, session_pid = NULL,
			    acquired_at = clock_timestamp(), renewed_at = clock_timestamp(), expires_at = excluded.expires_at
			  WHERE EXISTS (SELECT 1 FROM takeover) AND EXISTS (SELECT 1 FROM me)
			  RETURNING l.group_name, l.holder, l.term, l.expires_at
			)
			SELECT true AS granted, group_name, holder, term, expires_at, ${remaining_ms} AS remaining_ms
			FROM attempt
			UNION ALL
			SELECT false, group_name, holder, term, expires_at, ${remaining_ms} FROM ${prefix}leases
			WHERE group_name = ? AND NOT EXISTS (SELECT 1 FROM attempt)
			""";

	/**
	 * The heartbeat: registers the node, renews its leases, and reads the leases it asks
	 * about and the members, in one durable statement. Kinds of rows: {@code R} = renewed
	 * lease, {@code L} = lease as it stood, with the last index of the group's decision
	 * log and, in {@code pid}, the backend of the session the lease is bound to
	 * ({@link PostgresSessions}), {@code N} = member, with the session it is bound to in
	 * {@code session_pid} ({@code Statements.NODE_SESSION}; for this node's own row, the
	 * backend its row names, so that a row that lost its binding, forgotten while the
	 * node was paused, is bound again), {@code D} = the live registration of another
	 * process under this node's id. A new incarnation of a node clears the binding of the
	 * old one. Each row carries every column of the layout that {@link DaemonRows} reads
	 * too, {@code NULL} where its kind has no value. The node's own row comes from the
	 * upsert, because the other parts of the statement see the table as it was before the
	 * statement.
	 * <p>
	 * The node's row belongs to one incarnation, a process: another process with the same
	 * id takes it over only once it has gone silent for the node expiry and the leases
	 * granted or renewed under it have expired ({@code leases_until}, read from the row
	 * the upsert locks, so that a grant committed after this statement's snapshot is
	 * counted too). Until then the upsert changes nothing, nothing is renewed, and the
	 * other registration comes back as {@code D}. A row that the upsert inserts, after
	 * its node was forgotten while it held leases, records their expiry too. A node's row
	 * is forgotten after twice the node expiry without a heartbeat, once its leases have
	 * expired, by a heartbeat that finds the row unlocked: a row that a slow grant or
	 * heartbeat holds is left to a later one, and two heartbeats never wait for each
	 * other's rows. A process whose row is missing or another's registers only once no
	 * lease under the node's id is valid but those it holds, the terms it sends: a lease
	 * may outlive its holder's last heartbeat (it was granted after it, or it is longer
	 * than the node expiry), and its holder, merely paused, still acts on it. Until then
	 * those leases come back as {@code H}. A lease granted before the server's last
	 * promotion is not renewed: its holder steps down and acquires it again, under a term
	 * of the new epoch, so that no node goes on leading under a term that is lower than
	 * one that may have been granted, and seen by other systems, on the old primary.
	 */
	static final String TICK = """
			WITH held AS (
			  SELECT * FROM unnest(?::varchar[], ?::bigint[]) AS h(group_name, term)
			), foreign_leases AS (
			  SELECT l.group_name, l.holder, l.term, l.expires_at FROM ${prefix}leases l
			  WHERE l.holder = ? AND l.expires_at > clock_timestamp()
			    AND NOT EXISTS (SELECT 1 FROM held WHERE held.group_name = l.group_name AND held.term = l.term)
			), me AS (
			  INSERT INTO ${prefix}nodes AS n (node_id, name, host, pid, incarnation, started_at, heartbeat_at,
			    daemons, base_url, zone, leases_until)
			  SELECT ?, ?, ?, ?, ?, clock_timestamp(), clock_timestamp(), ?::varchar[], ?, ?,
			    CASE WHEN EXISTS (SELECT 1 FROM held) THEN clock_timestamp() + ? * interval '1 millisecond' END
			  FROM (SELECT ${durable}) AS durable
			  WHERE NOT EXISTS (SELECT 1 FROM foreign_leases)
			     OR EXISTS (SELECT 1 FROM ${prefix}nodes WHERE node_id = ? AND incarnation = ?)
			  ON CONFLICT (node_id) DO UPDATE SET heartbeat_at = clock_timestamp(), name = excluded.name,
			    host = excluded.host, pid = excluded.pid, daemons = excluded.daemons,
			    base_url = excluded.base_url, zone = excluded.zone,
			    incarnation = excluded.incarnation,
			    started_at = CASE WHEN n.incarnation = excluded.incarnation THEN n.started_at
			                      ELSE clock_timestamp() END,
			    drained = (n.drained AND n.incarnation = excluded.incarnation),
			    session_pid = CASE WHEN n.incarnation = excluded.incarnation THEN n.session_pid END,
			    session_server = CASE WHEN n.incarnation = excluded.incarnation THEN n.session_server END,
			    leases_until = CASE WHEN n.incarnation = excluded.incarnation
			                        THEN greatest(n.leases_until, excluded.leases_until) END
			  WHERE n.incarnation = excluded.incarnation
			     OR (n.heartbeat_at <= clock_timestamp() - ? * interval '1 millisecond'
			       AND (n.leases_until IS NULL OR n.leases_until <= clock_timestamp()))
			  RETURNING node_id, name, host, pid, started_at, heartbeat_at, daemons, drained, base_url, zone, session_pid
			), forgotten AS (
			  DELETE FROM ${prefix}nodes WHERE node_id IN (
			    SELECT node_id FROM ${prefix}nodes
			    WHERE node_id <> ? AND heartbeat_at < clock_timestamp() - 2 * ? * interval '1 millisecond'
			      AND (leases_until IS NULL OR leases_until <= clock_timestamp())
			    FOR UPDATE SKIP LOCKED)
			), renewed AS (
			  UPDATE ${prefix}leases l SET renewed_at = clock_timestamp(),
			         expires_at = clock_timestamp() + ? * interval '1 millisecond'
			  FROM held AS h
			  WHERE l.group_name = h.group_name AND l.term = h.term AND l.holder = ?
			    AND l.expires_at > clock_timestamp() AND EXISTS (SELECT 1 FROM me)
			    AND l.term > (SELECT ${epoch_base})
			  RETURNING l.group_name, l.holder, l.term, l.expires_at
			)
			SELECT 'R' AS kind, group_name, holder, term, expires_at, ${remaining_ms} AS remaining_ms,
			       NULL::varchar AS node_id, NULL::varchar AS name, NULL::varchar AS host, NULL::bigint AS pid,
			       NULL::timestamptz AS started_at, NULL::timestamptz AS heartbeat_at,
			       NULL::bigint AS heartbeat_age_ms, NULL::varchar[] AS daemons, NULL::boolean AS drained,
			       NULL::varchar AS daemon_name, NULL::varchar AS state, NULL::bigint AS generation,
			       NULL::timestamptz AS state_since, NULL::varchar AS request_kind, NULL::timestamptz AS requested_at,
			       NULL::timestamptz AS db_now, NULL::bigint AS log_index, NULL::varchar AS base_url,
			       NULL::varchar AS zone, NULL::bigint AS log_term, NULL::bigint AS session_pid
			FROM renewed
			UNION ALL
			SELECT 'L', l.group_name, holder, term, expires_at, ${remaining_ms},
			       NULL, NULL, NULL, l.session_pid, NULL, NULL, NULL, NULL, NULL,
			       NULL, NULL, NULL, NULL, NULL, NULL, NULL, h.last_index, NULL, NULL, h.last_term, NULL
			FROM ${prefix}leases l LEFT JOIN ${prefix}log_heads h ON h.group_name = l.group_name
			WHERE l.group_name = ANY (?::varchar[])
			UNION ALL
			SELECT 'N', NULL, NULL, NULL, NULL, NULL,
			       node_id, name, host, pid, started_at, heartbeat_at, 0, daemons, drained,
			       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, base_url, zone, NULL, session_pid
			FROM me
			UNION ALL
			SELECT CASE WHEN node_id = ? THEN 'D' ELSE 'N' END, NULL, NULL, NULL, NULL, NULL,
			       node_id, name, host, pid, started_at, heartbeat_at, ${heartbeat_age_ms}, daemons, drained,
			       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, base_url, zone, NULL, ${node_session}
			FROM ${prefix}nodes WHERE node_id <> ? OR NOT EXISTS (SELECT 1 FROM me)
			UNION ALL
			SELECT 'H', group_name, holder, term, expires_at, ${remaining_ms}, NULL, NULL, NULL, NULL, NULL, NULL,
			       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
			FROM foreign_leases WHERE NOT EXISTS (SELECT 1 FROM me)
			""";

	/**
	 * Releases leases. A release is a change of holder: it locks the rows FOR UPDATE, in
	 * a fixed order, before it changes them, so that it waits for the guarded
	 * transactions of the terms it ends.
	 * <p>
	 * A release commits without waiting for its WAL to be flushed (synchronous_commit off
	 * for its own transaction only). A release lost in a crash of the database leaves the
	 * lease to its holder until it expires, as a crashed holder does: nothing is granted
	 * on it, and the term is not changed. Whoever acts on a release acquires in a durable
	 * commit, which flushes the WAL up to it, release included. Acquire and renewal stay
	 * durable, since a lost term increment could give two holders one term.
	 * <p>
	 * The notification names the node that should acquire first: the one that has run
	 * longest, other than the releasing one, which is likely the warmest. Deregistered
	 * nodes are gone; a crashed one is named until it is forgotten, and then the others
	 * acquire a few milliseconds later.
	 */
	static final String RELEASE = """
			WITH locked AS (
			  SELECT l.group_name FROM ${prefix}leases l
			  JOIN unnest(?::varchar[], ?::bigint[]) AS h(group_name, term)
			    ON l.group_name = h.group_name AND l.term = h.term
			  WHERE l.holder = ?
			  ORDER BY l.group_name
			  FOR UPDATE OF l
			), released AS (
			  UPDATE ${prefix}leases l SET holder = NULL, expires_at = clock_timestamp()
			  FROM locked WHERE l.group_name = locked.group_name
			  RETURNING l.group_name
			), successor AS (
			  SELECT node_id FROM ${prefix}nodes WHERE node_id <> ? ORDER BY started_at, node_id LIMIT 1
			)
			SELECT group_name, pg_notify(?, concat_ws(' ', group_name, (SELECT node_id FROM successor))) AS notified,
			       set_config('synchronous_commit', 'off', true) AS synchronous_commit
			FROM released
			""";

	static final String DEREGISTER = """
			DELETE FROM ${prefix}nodes WHERE node_id = ? AND incarnation = ?""";

	static final String LEASES = """
			SELECT group_name, holder, term, expires_at, ${remaining_ms} AS remaining_ms FROM ${prefix}leases
			ORDER BY group_name""";

	/**
	 * Renders the statements.
	 * @param prefix the validated table prefix
	 */
	CoordinationSql(TablePrefix prefix) {
		this(prefix.render(ACQUIRE), prefix.render(TICK),
				prefix.render(TICK + "UNION ALL\n" + DaemonRows.ASSIGNMENTS_REQUESTS_AND_CLOCK), prefix.render(RELEASE),
				prefix.render(DEREGISTER), prefix.render(LEASES));
	}

}
