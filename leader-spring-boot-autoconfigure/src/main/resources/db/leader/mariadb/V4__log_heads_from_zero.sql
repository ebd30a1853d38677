-- A group's log head is created empty (last_index 0, last_term 0) when its lease is granted, so that appends only ever
-- update an existing row. Creating it on the first append let concurrent first appends deadlock when the inserting one
-- rolled back: InnoDB's waiters on a duplicate key each hold a gap lock that the others' inserts need.
ALTER TABLE ${prefix}log_heads
    MODIFY last_index BIGINT NOT NULL CHECK (last_index >= 0),
    MODIFY last_term  BIGINT NOT NULL CHECK (last_term >= 0);
