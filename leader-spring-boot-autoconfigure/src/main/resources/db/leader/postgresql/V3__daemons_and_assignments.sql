-- Daemon assignment. ${prefix} is the validated leader.jdbc.table-prefix; every timestamp is database time.

-- The daemons a node can run, written by its heartbeat, so that a daemon only goes to nodes that have it.
ALTER TABLE ${prefix}nodes ADD COLUMN daemons VARCHAR(120)[] NOT NULL DEFAULT '{}';

-- One row per daemon, kept when it reaches DELETED, so that its generation never goes down.
CREATE TABLE ${prefix}assignments (
    daemon_name VARCHAR(120) NOT NULL PRIMARY KEY,
    node_id     VARCHAR(120) NOT NULL,
    state       VARCHAR(10)  NOT NULL CHECK (state IN ('ASSIGNING', 'ACTIVE', 'REVOKING', 'DELETED')),
    generation  BIGINT       NOT NULL CHECK (generation > 0),
    term        BIGINT       NOT NULL CHECK (term > 0),
    assigned_at TIMESTAMPTZ  NOT NULL,
    acked_at    TIMESTAMPTZ,
    revoking_at TIMESTAMPTZ,
    deleted_at  TIMESTAMPTZ,
    state_since TIMESTAMPTZ  NOT NULL
);
