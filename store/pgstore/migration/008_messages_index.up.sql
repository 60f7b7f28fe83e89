-- The index on (thread_id, created_at, seq) served no query: messages are
-- read by id or by thread in seq order (UNIQUE (thread_id, seq)), which
-- also serves the cascade from threads. Each message insert paid for it.
DROP INDEX messages_thread_created_idx;
