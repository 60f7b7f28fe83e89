-- The calls of runs, recorded for the inspector (issue 35): see the
-- PostgreSQL migration 014. detail is JSON text.
CREATE TABLE call_records (
    id               TEXT NOT NULL,
    owner_id         TEXT NOT NULL,
    thread_id        TEXT,
    run_id           TEXT NOT NULL,
    checkpoint_id    TEXT NOT NULL DEFAULT '',
    step             INTEGER NOT NULL DEFAULT 0,
    kind             TEXT NOT NULL CHECK (kind IN ('model', 'tool', 'agent_tool', 'transfer')),
    agent            TEXT NOT NULL DEFAULT '',
    sub              INTEGER NOT NULL DEFAULT 0,
    model            TEXT NOT NULL DEFAULT '',
    name             TEXT NOT NULL DEFAULT '',
    call_id          TEXT NOT NULL DEFAULT '',
    error            TEXT NOT NULL DEFAULT '',
    finish_reason    TEXT NOT NULL DEFAULT '',
    request_id       TEXT NOT NULL DEFAULT '',
    started_at       INTEGER NOT NULL,
    first_token_us   INTEGER NOT NULL DEFAULT 0,
    latency_us       INTEGER NOT NULL DEFAULT 0,
    input_tokens     INTEGER NOT NULL DEFAULT 0,
    output_tokens    INTEGER NOT NULL DEFAULT 0,
    cached_tokens    INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0,
    truncated        INTEGER NOT NULL DEFAULT 0,
    detail           TEXT NOT NULL DEFAULT '{}',
    created_at       INTEGER NOT NULL,
    PRIMARY KEY (owner_id, id),
    FOREIGN KEY (thread_id, owner_id) REFERENCES threads (id, owner_id) ON DELETE CASCADE
) STRICT;

CREATE INDEX call_records_run_idx ON call_records (owner_id, run_id, started_at);
CREATE INDEX call_records_thread_idx ON call_records (thread_id) WHERE thread_id IS NOT NULL;
CREATE INDEX call_records_created_idx ON call_records (created_at);
