CREATE TABLE invoices (
    id         BIGSERIAL    PRIMARY KEY,
    node_id    VARCHAR(120) NOT NULL,
    term       BIGINT       NOT NULL,
    step       INT          NOT NULL,
    written_at TIMESTAMPTZ  NOT NULL DEFAULT clock_timestamp()
);
