CREATE TABLE settlement_batches (
    id       BIGSERIAL   PRIMARY KEY,
    node_id  VARCHAR(120) NOT NULL,
    term     BIGINT       NOT NULL,
    ran_at   TIMESTAMPTZ  NOT NULL DEFAULT clock_timestamp()
);
