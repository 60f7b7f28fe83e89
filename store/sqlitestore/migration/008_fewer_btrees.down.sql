-- The schema of 007: run_leases a rowid table again, with its index on
-- expires_at, messages with UNIQUE (id, owner_id) and message_drafts'
-- composite foreign key. The tables are rebuilt as in the up migration.

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
