-- Crash takeover (leader.lease.crash-takeover-groups). ${prefix} is the validated leader.jdbc.table-prefix.

-- The CONNECTION_ID() of the holder's session that holds the named lock of the lease's term, set by the holder once it
-- has taken that lock; every grant clears it. While that session holds the lock, the holder's process lives; once it
-- does not, a follower may take the lease over before it expires.
ALTER TABLE ${prefix}leases ADD COLUMN session_id BIGINT NULL;
