-- Run checkpoints and background job runs.
CREATE TABLE checkpoints (
    seq         INTEGER PRIMARY KEY, -- write order, for the latest of a thread
    id          TEXT NOT NULL UNIQUE,
    owner_id    TEXT NOT NULL,
    thread_id   TEXT,
    run_id      TEXT NOT NULL,
    parent_id   TEXT,
    step        INTEGER NOT NULL,
    status      TEXT NOT NULL,
    fingerprint TEXT NOT NULL,        -- network version the state was written under
    network     TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    state       BLOB NOT NULL,        -- runstate.Encode
    UNIQUE (owner_id, run_id, step),
    FOREIGN KEY (thread_id, owner_id) REFERENCES threads (id, owner_id) ON DELETE CASCADE
) STRICT;

CREATE INDEX checkpoints_thread_idx ON checkpoints (thread_id, seq) WHERE thread_id IS NOT NULL;

CREATE TABLE job_runs (
    id              TEXT PRIMARY KEY,
    owner_id        TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    kind            TEXT NOT NULL,
    thread_id       TEXT,
    status          TEXT NOT NULL
                    CHECK (status IN ('queued', 'processing', 'completed', 'error', 'canceled')),
    attempt         INTEGER NOT NULL DEFAULT 0,
    error           TEXT NOT NULL DEFAULT '',
    metadata        TEXT NOT NULL DEFAULT '{}',
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    started_at      INTEGER,
    finished_at     INTEGER,
    UNIQUE (owner_id, idempotency_key),
    FOREIGN KEY (thread_id, owner_id) REFERENCES threads (id, owner_id) ON DELETE CASCADE
) STRICT;

CREATE INDEX job_runs_thread_idx ON job_runs (thread_id, created_at) WHERE thread_id IS NOT NULL;
