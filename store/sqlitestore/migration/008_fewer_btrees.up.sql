-- Fewer b-trees per write (issue 18): every b-tree an insert touches is at
-- least one more page written to the WAL at commit.
--
-- run_leases becomes a WITHOUT ROWID table: its primary key, which every
-- lookup uses, is the table, instead of a rowid table and a separate index
-- on the key (one b-tree fewer per insert and delete); its rows are small.
-- Measured and left as they are: job_runs the same way saved 0.2 of 78 WAL
-- pages per continuation (its two other indexes then hold the text key
-- instead of the rowid: wider entries, more splits), not worth rebuilding a
-- table of a row per continuation; messages without rowid 0.6 more, in a
-- benchmark of short messages (a row over about 1 KB spills to overflow
-- pages); checkpoints hold a state of kilobytes per row.
--
-- run_leases loses its index on expires_at: the table holds a row per run
-- executing now (written when a run starts, deleted when it hands over or
-- ends), and finding the expired ones (every AdoptEvery, 15 s by default)
-- reads it whole, as renewing a process's leases (holder, run_id: no index)
-- already does every LeaseTTL/3. Each run paid an index insert and delete.
--
-- messages loses UNIQUE (id, owner_id): it existed only for the composite
-- foreign key of message_drafts, which now references messages (id). That a
-- draft has its message's owner is the store's invariant: UpsertDraft
-- writes a draft only after finding the message among the owner's, and a
-- message's owner never changes.
--
-- The migration runs in a transaction with foreign keys enforced, so each
-- table is renamed away, created anew, filled from the old one and the old
-- one dropped, children before their parents: dropping a parent table
-- that a child still references would delete the child's rows.

ALTER TABLE run_leases RENAME TO run_leases_old;
DROP INDEX run_leases_expiry_idx;
CREATE TABLE run_leases (
    owner_id   TEXT NOT NULL,
    run_id     TEXT NOT NULL,
    thread_id  TEXT,
    holder     TEXT NOT NULL,    -- the process: host, pid and a random part
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (owner_id, run_id),
    FOREIGN KEY (thread_id, owner_id) REFERENCES threads (id, owner_id) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;
INSERT INTO run_leases (owner_id, run_id, thread_id, holder, expires_at)
    SELECT owner_id, run_id, thread_id, holder, expires_at FROM run_leases_old;
DROP TABLE run_leases_old;

-- message_drafts references messages: both are renamed (the drafts' foreign
-- key follows messages to messages_old), the new ones created and filled,
-- and the old drafts dropped before the old messages.
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
    UNIQUE (thread_id, seq),
    FOREIGN KEY (thread_id, owner_id) REFERENCES threads (id, owner_id) ON DELETE CASCADE
) STRICT;
INSERT INTO messages (id, owner_id, thread_id, seq, role, agent, parts, status, parent_message_id, usage, metadata,
                      created_at, updated_at)
    SELECT id, owner_id, thread_id, seq, role, agent, parts, status, parent_message_id, usage, metadata,
           created_at, updated_at FROM messages_old ORDER BY rowid;
CREATE TABLE message_drafts (
    message_id TEXT PRIMARY KEY,
    owner_id   TEXT NOT NULL,     -- the message's owner (UpsertDraft checks it)
    text       TEXT NOT NULL DEFAULT '',
    version    INTEGER NOT NULL DEFAULT 1,
    updated_at INTEGER NOT NULL,
    FOREIGN KEY (message_id) REFERENCES messages (id) ON DELETE CASCADE
) STRICT;
INSERT INTO message_drafts (message_id, owner_id, text, version, updated_at)
    SELECT message_id, owner_id, text, version, updated_at FROM message_drafts_old ORDER BY rowid;
DROP TABLE message_drafts_old;
DROP TABLE messages_old;
