-- Tables of leader-spring-boot-starter on MariaDB. ${prefix} is the validated leader.jdbc.table-prefix.
-- Every timestamp is database time in UTC, written by the statements (SYSDATE(6) at execution, shifted to UTC),
-- never by an application node. Names compare byte for byte (utf8mb4_bin), as they do on PostgreSQL.
--
-- InnoDB has no FOR KEY SHARE: a shared lock on a row conflicts with every update of it. So the rows that guards
-- lock, which change only with a change of holder, term or generation, are kept apart from the rows that the
-- holder's renewal, acknowledgement and revoke update: lease_terms beside leases, assignment_owners beside
-- assignments. Both rows of a pair are always changed in one transaction.

CREATE TABLE ${prefix}leases (
    group_name  VARCHAR(120) NOT NULL PRIMARY KEY,
    holder      VARCHAR(120),
    term        BIGINT       NOT NULL CHECK (term > 0),
    acquired_at DATETIME(6)  NOT NULL,
    renewed_at  DATETIME(6)  NOT NULL,
    expires_at  DATETIME(6)  NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The holder and term of each lease, which guards lock in share mode and only a change of holder or term updates.
CREATE TABLE ${prefix}lease_terms (
    group_name VARCHAR(120) NOT NULL PRIMARY KEY,
    holder     VARCHAR(120),
    term       BIGINT       NOT NULL CHECK (term > 0)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- daemons: the names of the daemons the node can run, separated by single spaces (names have no spaces).
CREATE TABLE ${prefix}nodes (
    node_id      VARCHAR(120) NOT NULL PRIMARY KEY,
    name         VARCHAR(200) NOT NULL,
    host         VARCHAR(255) NOT NULL,
    pid          BIGINT       NOT NULL,
    incarnation  VARCHAR(100) NOT NULL DEFAULT '',
    started_at   DATETIME(6)  NOT NULL,
    heartbeat_at DATETIME(6)  NOT NULL,
    daemons      TEXT         NOT NULL,
    drained      BOOLEAN      NOT NULL DEFAULT FALSE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Highest fencing token seen per resource, for resources written outside the lease's own transaction.
CREATE TABLE ${prefix}fences (
    resource   VARCHAR(120) NOT NULL PRIMARY KEY,
    group_name VARCHAR(120) NOT NULL,
    term       BIGINT       NOT NULL CHECK (term > 0),
    updated_at DATETIME(6)  NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- One row per daemon, kept when it reaches DELETED, so that its generation never goes down.
CREATE TABLE ${prefix}assignments (
    daemon_name VARCHAR(120) NOT NULL PRIMARY KEY,
    node_id     VARCHAR(120) NOT NULL,
    state       VARCHAR(10)  NOT NULL CHECK (state IN ('ASSIGNING', 'ACTIVE', 'REVOKING', 'DELETED')),
    generation  BIGINT       NOT NULL CHECK (generation > 0),
    term        BIGINT       NOT NULL CHECK (term > 0),
    assigned_at DATETIME(6)  NOT NULL,
    acked_at    DATETIME(6),
    revoking_at DATETIME(6),
    deleted_at  DATETIME(6),
    state_since DATETIME(6)  NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The node, generation and liveness of each assignment, which the daemon guard locks in share mode and only an
-- assignment and the end of one (DELETED) update; an acknowledgement and a revoke update the assignment alone.
CREATE TABLE ${prefix}assignment_owners (
    daemon_name VARCHAR(120) NOT NULL PRIMARY KEY,
    node_id     VARCHAR(120) NOT NULL,
    generation  BIGINT       NOT NULL CHECK (generation > 0),
    live        BOOLEAN      NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Operator requests that any node records and the leader of the daemons group carries out and deletes, under its
-- lease term. REBALANCE has daemon_name ''; MOVE names the daemon and, optionally, the node to move it to.
CREATE TABLE ${prefix}daemon_requests (
    kind         VARCHAR(10)  NOT NULL CHECK (kind IN ('REBALANCE', 'MOVE')),
    daemon_name  VARCHAR(120) NOT NULL,
    node_id      VARCHAR(120),
    requested_at DATETIME(6)  NOT NULL,
    PRIMARY KEY (kind, daemon_name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
