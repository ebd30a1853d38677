-- Node death by session: when the daemons group is a crash-takeover group (leader.lease.crash-takeover-groups), a node
-- binds its row to its listening session. ${prefix} is the validated leader.jdbc.table-prefix.

-- The backend process of that session, which is also the second key of the advisory lock it holds (so that no other
-- live session can hold that lock), and the start of the server it runs on: a binding made on an earlier start of the
-- server (before a shutdown or a promotion) is ignored, and the heartbeat decides. While the session holds the lock,
-- the node's process lives; once it does not, the node is dead, whatever its last heartbeat. A new incarnation of the
-- node clears them.
ALTER TABLE ${prefix}nodes ADD COLUMN session_pid INTEGER;
ALTER TABLE ${prefix}nodes ADD COLUMN session_server TIMESTAMPTZ;
