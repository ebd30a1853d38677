CREATE TABLE outbox (
    id            BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    payload       TEXT         NOT NULL,
    created_at    DATETIME(6)  NOT NULL DEFAULT UTC_TIMESTAMP(6),
    dispatched_at DATETIME(6),
    dispatched_by VARCHAR(120),
    generation    BIGINT
) ENGINE = InnoDB;

CREATE TABLE reports (
    id         BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    node_id    VARCHAR(120) NOT NULL,
    generation BIGINT       NOT NULL,
    dispatched BIGINT       NOT NULL,
    built_at   DATETIME(6)  NOT NULL DEFAULT UTC_TIMESTAMP(6)
) ENGINE = InnoDB;
