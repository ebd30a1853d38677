-- Node death by session: when the daemons group is a crash-takeover group (leader.lease.crash-takeover-groups), a node
-- binds its row to the session that holds its wake-up locks. ${prefix} is the validated leader.jdbc.table-prefix.

-- The CONNECTION_ID() of that session, which holds the node's named lock (<prefix>node:<database>:<node id>). While it
-- does, the node's process lives; once it does not, the node is dead, whatever its last heartbeat. A new incarnation of
-- the node clears it.
--
-- No mark of the server's start beside it: connection ids start again after a restart, but a restart ends every
-- session, so every bound node has lost its binding, stops its daemons and binds again on its next heartbeat. Until
-- then IS_USED_LOCK finds no holder (or one that is not this id), and the node counts as dead, which it is to its own
-- daemons too. A stale id cannot pass for a live binding: only the node's own binding holds its lock for longer than
-- the instant in which another node's watcher takes it, once its session has ended, and gives it back.
ALTER TABLE ${prefix}nodes ADD COLUMN session_id BIGINT NULL;
