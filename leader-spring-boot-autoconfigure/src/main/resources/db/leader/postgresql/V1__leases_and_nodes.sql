-- Tables of leader-spring-boot-starter. ${prefix} is the validated leader.jdbc.table-prefix.
-- Every timestamp is written by the database clock (clock_timestamp()), never by an application node.

CREATE TABLE ${prefix}leases (
    group_name  VARCHAR(120) NOT NULL PRIMARY KEY,
    holder      VARCHAR(120),
    term        BIGINT       NOT NULL CHECK (term > 0),
    acquired_at TIMESTAMPTZ  NOT NULL,
    renewed_at  TIMESTAMPTZ  NOT NULL,
    expires_at  TIMESTAMPTZ  NOT NULL
);

CREATE TABLE ${prefix}nodes (
    node_id      VARCHAR(120) NOT NULL PRIMARY KEY,
    name         VARCHAR(200) NOT NULL,
    host         VARCHAR(255) NOT NULL,
    pid          BIGINT       NOT NULL,
    started_at   TIMESTAMPTZ  NOT NULL,
    heartbeat_at TIMESTAMPTZ  NOT NULL
);
