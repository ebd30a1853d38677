-- The sample's tables on MariaDB; times are UTC, as the starter's are.
CREATE TABLE settlement_batches (
    id       BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    node_id  VARCHAR(120) NOT NULL,
    term     BIGINT       NOT NULL,
    ran_at   DATETIME(6)  NOT NULL DEFAULT UTC_TIMESTAMP(6)
) ENGINE = InnoDB;
