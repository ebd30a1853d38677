-- Highest fencing token seen per resource, for resources written outside the lease's own transaction.
CREATE TABLE ${prefix}fences (
    resource   VARCHAR(120) NOT NULL PRIMARY KEY,
    group_name VARCHAR(120) NOT NULL,
    term       BIGINT       NOT NULL CHECK (term > 0),
    updated_at TIMESTAMPTZ  NOT NULL
);
