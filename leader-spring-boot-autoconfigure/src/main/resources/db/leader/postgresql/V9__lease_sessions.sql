-- Crash takeover (leader.lease.crash-takeover-groups). ${prefix} is the validated leader.jdbc.table-prefix.

-- The backend process of the session that holds the lease's advisory lock, set by the holder once it has taken that
-- lock; every grant clears it. While that session holds the lock, the holder's process lives; once it does not, a
-- follower may take the lease over before it expires.
ALTER TABLE ${prefix}leases ADD COLUMN session_pid INTEGER;
