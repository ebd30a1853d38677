CREATE TABLE outbox (
    id            BIGSERIAL    PRIMARY KEY,
    payload       TEXT         NOT NULL,
    created_at    TIMESTAMPTZ  NOT NULL DEFAULT clock_timestamp(),
    dispatched_at TIMESTAMPTZ,
    dispatched_by VARCHAR(120),
    generation    BIGINT
);

CREATE TABLE reports (
    id         BIGSERIAL    PRIMARY KEY,
    node_id    VARCHAR(120) NOT NULL,
    generation BIGINT       NOT NULL,
    dispatched BIGINT       NOT NULL,
    built_at   TIMESTAMPTZ  NOT NULL DEFAULT clock_timestamp()
);
