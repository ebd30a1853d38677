-- Decision logs of groups on MariaDB. ${prefix} is the validated leader.jdbc.table-prefix. Times are database time in
-- UTC, as in V1.

-- The last entry of each group's log. An append increments last_index on this row, so the row lock orders the
-- appends of a group: indexes have no gap and commit in index order. It is neither the leases row, which the holder's
-- renewal updates, nor the lease_terms row, which appends lock in share mode, so that a long transaction that appends
-- never holds up the heartbeat.
CREATE TABLE ${prefix}log_heads (
    group_name  VARCHAR(120) NOT NULL PRIMARY KEY,
    last_index  BIGINT       NOT NULL CHECK (last_index > 0),
    last_term   BIGINT       NOT NULL CHECK (last_term > 0),
    appended_at DATETIME(6)  NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE ${prefix}log_entries (
    group_name  VARCHAR(120) NOT NULL,
    log_index   BIGINT       NOT NULL CHECK (log_index > 0),
    term        BIGINT       NOT NULL CHECK (term > 0),
    type        VARCHAR(120) NOT NULL,
    payload     LONGTEXT     NOT NULL,
    appended_at DATETIME(6)  NOT NULL,
    PRIMARY KEY (group_name, log_index)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
