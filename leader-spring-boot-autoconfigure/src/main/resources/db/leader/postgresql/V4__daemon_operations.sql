-- Daemon operations. ${prefix} is the validated leader.jdbc.table-prefix; every timestamp is database time.

-- A drained node gets no daemons, and the leader moves the ones it has away. The node's heartbeat keeps the flag
-- while the same process (host and pid) runs, and clears it when the node id comes back in another process.
ALTER TABLE ${prefix}nodes ADD COLUMN drained BOOLEAN NOT NULL DEFAULT false;

-- Operator requests that any node records and the leader of the daemons group carries out and deletes, under its
-- lease term. REBALANCE has daemon_name ''; MOVE names the daemon and, optionally, the node to move it to.
CREATE TABLE ${prefix}daemon_requests (
    kind         VARCHAR(10)  NOT NULL CHECK (kind IN ('REBALANCE', 'MOVE')),
    daemon_name  VARCHAR(120) NOT NULL,
    node_id      VARCHAR(120),
    requested_at TIMESTAMPTZ  NOT NULL,
    PRIMARY KEY (kind, daemon_name)
);
