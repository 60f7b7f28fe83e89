-- The schema of 007: run_leases (with its index on expires_at) and job_runs
-- rowid tables again, messages with UNIQUE (id, owner_id) and
-- message_drafts' composite foreign key. The tables are rebuilt as in the
-- up migration.

ALTER TABLE run_leases RENAME TO run_leases_old;
CREATE TABLE run_leases (
    owner_id   TEXT NOT NULL,
    run_id     TEXT NOT NULL,
    thread_id  TEXT,
    holder     TEXT NOT NULL,    -- the process: host, pid and a random part
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (owner_id, run_id),
    FOREIGN KEY (thread_id, owner_id) REFERENCES threads (id, owner_id) ON DELETE CASCADE
) STRICT;
INSERT INTO run_leases (owner_id, run_id, thread_id, holder, expires_at)
    SELECT owner_id, run_id, thread_id, holder, expires_at FROM run_leases_old;
DROP TABLE run_leases_old;
CREATE INDEX run_leases_expiry_idx ON run_leases (expires_at);

ALTER TABLE job_runs RENAME TO job_runs_old;
DROP INDEX job_runs_thread_idx;
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
INSERT INTO job_runs (id, owner_id, idempotency_key, kind, thread_id, status, attempt, error, metadata,
                      created_at, updated_at, started_at, finished_at)
    SELECT id, owner_id, idempotency_key, kind, thread_id, status, attempt, error, metadata,
           created_at, updated_at, started_at, finished_at FROM job_runs_old ORDER BY created_at, id;
DROP TABLE job_runs_old;
CREATE INDEX job_runs_thread_idx ON job_runs (thread_id, created_at) WHERE thread_id IS NOT NULL;

ALTER TABLE message_drafts RENAME TO message_drafts_old;
ALTER TABLE messages RENAME TO messages_old;
CREATE TABLE messages (
    id                TEXT PRIMARY KEY,
    owner_id          TEXT NOT NULL,
    thread_id         TEXT NOT NULL,
    seq               INTEGER NOT NULL,
    role              TEXT NOT NULL,
    agent             TEXT NOT NULL DEFAULT '',
    parts             TEXT NOT NULL DEFAULT '[]', -- JSON array of message.Part
    status            TEXT NOT NULL DEFAULT 'completed'
                      CHECK (status IN ('queued', 'streaming', 'completed', 'error')),
    parent_message_id TEXT,
    usage             TEXT,                       -- JSON message.Usage
    metadata          TEXT NOT NULL DEFAULT '{}', -- JSON object, e.g. handoff_event_id
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    UNIQUE (id, owner_id),
    UNIQUE (thread_id, seq),
    FOREIGN KEY (thread_id, owner_id) REFERENCES threads (id, owner_id) ON DELETE CASCADE
) STRICT;
INSERT INTO messages (id, owner_id, thread_id, seq, role, agent, parts, status, parent_message_id, usage, metadata,
                      created_at, updated_at)
    SELECT id, owner_id, thread_id, seq, role, agent, parts, status, parent_message_id, usage, metadata,
           created_at, updated_at FROM messages_old ORDER BY rowid;
CREATE TABLE message_drafts (
    message_id TEXT PRIMARY KEY,
    owner_id   TEXT NOT NULL,
    text       TEXT NOT NULL DEFAULT '',
    version    INTEGER NOT NULL DEFAULT 1,
    updated_at INTEGER NOT NULL,
    FOREIGN KEY (message_id, owner_id) REFERENCES messages (id, owner_id) ON DELETE CASCADE
) STRICT;
INSERT INTO message_drafts (message_id, owner_id, text, version, updated_at)
    SELECT message_id, owner_id, text, version, updated_at FROM message_drafts_old ORDER BY rowid;
DROP TABLE message_drafts_old;
DROP TABLE messages_old;
