-- The heartbeat's renewal marker. ${prefix} is the validated leader.jdbc.table-prefix.

-- A number the renewing heartbeat chose at random, set with each renewal, so that the heartbeat's read tells which leases
-- that renewal extended, whatever the database clock did and in whichever order its statements ran.
ALTER TABLE ${prefix}leases ADD COLUMN renewal BIGINT NULL;
