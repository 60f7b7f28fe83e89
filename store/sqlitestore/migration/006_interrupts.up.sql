-- Interrupts: every request for a person's decision, stored — a run's
-- approvals (kind run, written in the checkpoint's transaction) and thread
-- handoff proposals (kind thread_handoff) — decided through one surface,
-- compare-and-swap on the status.
CREATE TABLE interrupts (
    id         TEXT NOT NULL,
    owner_id   TEXT NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('run', 'thread_handoff')),
    thread_id  TEXT,
    run_id     TEXT,
    network    TEXT NOT NULL DEFAULT '',
    agent      TEXT NOT NULL DEFAULT '',
    status     TEXT NOT NULL CHECK (status IN ('pending', 'decided', 'superseded')),
    payload    TEXT NOT NULL,  -- JSON: what the person is shown, versioned per kind
    decision   TEXT,           -- JSON, set when the status leaves pending
    outcome    TEXT,           -- JSON
    created_at INTEGER NOT NULL,
    decided_at INTEGER,
    PRIMARY KEY (owner_id, id),
    FOREIGN KEY (thread_id, owner_id) REFERENCES threads (id, owner_id) ON DELETE CASCADE
) STRICT;

CREATE INDEX interrupts_thread_idx ON interrupts (thread_id, created_at) WHERE thread_id IS NOT NULL;
-- A thread has at most one pending thread handoff proposal.
CREATE UNIQUE INDEX interrupts_thread_handoff_pending_idx ON interrupts (owner_id, thread_id)
    WHERE kind = 'thread_handoff' AND status = 'pending';
