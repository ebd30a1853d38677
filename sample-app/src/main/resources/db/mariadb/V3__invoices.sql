CREATE TABLE invoices (
    id         BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    node_id    VARCHAR(120) NOT NULL,
    term       BIGINT       NOT NULL,
    step       INT          NOT NULL,
    written_at DATETIME(6)  NOT NULL DEFAULT UTC_TIMESTAMP(6)
) ENGINE = InnoDB;
