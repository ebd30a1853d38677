-- Node incarnations. ${prefix} is the validated leader.jdbc.table-prefix.

-- The process that registered the node id: a second live process with the same id is refused, so that two
-- processes never share the id's leases and terms. Rows of earlier versions have none, and are taken over by the
-- next heartbeat of their id like a row of a process that stopped.
ALTER TABLE ${prefix}nodes ADD COLUMN incarnation VARCHAR(100) NOT NULL DEFAULT '';
