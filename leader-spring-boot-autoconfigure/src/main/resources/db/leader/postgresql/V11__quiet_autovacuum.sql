-- Autovacuum of the two tables that an idle cluster writes. ${prefix} is the validated leader.jdbc.table-prefix.

-- Every heartbeat rewrites its node's row, and the leader's renews its leases: small tables whose updates change no
-- indexed column, so they are HOT and each page prunes its own dead rows as it is read. At the default thresholds
-- (50 changed rows) autovacuum vacuums and analyzes each about once a minute, and each visit is a handful of
-- transactions of the server's own in the application's database: for three idle nodes, about a fifth of their load.
-- 5,000 rows is an hour of a three-node cluster, or a minute of three hundred nodes. Freezing against transaction
-- ID wraparound does not depend on these thresholds.
ALTER TABLE ${prefix}nodes SET (autovacuum_vacuum_threshold = 5000, autovacuum_analyze_threshold = 5000);
ALTER TABLE ${prefix}leases SET (autovacuum_vacuum_threshold = 5000, autovacuum_analyze_threshold = 5000);
