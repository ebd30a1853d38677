-- Decision logs of groups. ${prefix} is the validated leader.jdbc.table-prefix.

-- The last entry of each group's log. An append increments last_index on this row, so the row lock orders the
-- appends of a group: indexes have no gap and commit in index order. It is not the lease row, which the holder's
-- renewal updates, so that a long transaction that appends never holds up the heartbeat.
CREATE TABLE ${prefix}log_heads (
    group_name  VARCHAR(120) NOT NULL PRIMARY KEY,
    last_index  BIGINT       NOT NULL CHECK (last_index > 0),
    last_term   BIGINT       NOT NULL CHECK (last_term > 0),
    appended_at TIMESTAMPTZ  NOT NULL
);

CREATE TABLE ${prefix}log_entries (
    group_name  VARCHAR(120) NOT NULL,
    log_index   BIGINT       NOT NULL CHECK (log_index > 0),
    term        BIGINT       NOT NULL CHECK (term > 0),
    type        VARCHAR(120) NOT NULL,
    payload     TEXT         NOT NULL,
    appended_at TIMESTAMPTZ  NOT NULL,
    PRIMARY KEY (group_name, log_index)
);
