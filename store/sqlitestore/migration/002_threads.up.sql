-- Threads, their messages and the drafts of messages being streamed.
CREATE TABLE threads (
    id           TEXT PRIMARY KEY,
    owner_id     TEXT NOT NULL REFERENCES owners (id) ON DELETE CASCADE,
    parent_id    TEXT,
    name         TEXT NOT NULL DEFAULT '',
    network      TEXT NOT NULL DEFAULT '',
    active_agent TEXT NOT NULL DEFAULT '',
    metadata     TEXT NOT NULL DEFAULT '{}', -- JSON object: namespace -> value
    version      INTEGER NOT NULL DEFAULT 1,
    next_seq     INTEGER NOT NULL DEFAULT 0, -- last message seq handed out
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    UNIQUE (id, owner_id),
    FOREIGN KEY (parent_id, owner_id) REFERENCES threads (id, owner_id)
) STRICT;

CREATE INDEX threads_owner_created_idx ON threads (owner_id, created_at, id);
CREATE INDEX threads_parent_idx ON threads (parent_id) WHERE parent_id IS NOT NULL;

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

CREATE INDEX messages_thread_created_idx ON messages (thread_id, created_at, seq);

CREATE TABLE message_drafts (
    message_id TEXT PRIMARY KEY,
    owner_id   TEXT NOT NULL,
    text       TEXT NOT NULL DEFAULT '',
    version    INTEGER NOT NULL DEFAULT 1,
    updated_at INTEGER NOT NULL,
    FOREIGN KEY (message_id, owner_id) REFERENCES messages (id, owner_id) ON DELETE CASCADE
) STRICT;
