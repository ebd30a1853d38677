-- One process per node id: the latest expiry of the leases granted or renewed under the node's row, by its process. A
-- process takes the id over only once the row has been silent for the node expiry and this time has passed, both read
-- from the row it locks: a grant whose commit was slow stamps the heartbeat when it runs, not when it commits, and its
-- lease, still invisible to the other process's snapshot, is in the row. ${prefix} is the validated
-- leader.jdbc.table-prefix.
ALTER TABLE ${prefix}nodes ADD COLUMN leases_until TIMESTAMPTZ;
