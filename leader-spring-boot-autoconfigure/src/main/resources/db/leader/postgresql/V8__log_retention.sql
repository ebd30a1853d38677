-- Where retention truncated each group's decision log. ${prefix} is the validated leader.jdbc.table-prefix.

-- The last entry that the group's leader removed: a node that has not applied it cannot read the log from where it
-- stands, and resets its appliers to this entry instead. A table of its own, so that truncating never takes the lock
-- of the log's head row, which orders the appends.
CREATE TABLE ${prefix}log_starts (
    group_name      VARCHAR(120) NOT NULL PRIMARY KEY,
    truncated_index BIGINT       NOT NULL CHECK (truncated_index > 0),
    truncated_term  BIGINT       NOT NULL CHECK (truncated_term > 0),
    truncated_at    TIMESTAMPTZ  NOT NULL
);
