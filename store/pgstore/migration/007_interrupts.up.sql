-- Interrupts: every request for a person's decision, stored — a run's
-- approvals (kind run, written in the checkpoint's transaction) and thread
-- handoff proposals (kind thread_handoff) — decided through one surface,
-- compare-and-swap on the status.
CREATE TABLE interrupts (
    id         text NOT NULL,
    owner_id   text NOT NULL,
    kind       text NOT NULL CHECK (kind IN ('run', 'thread_handoff')),
    thread_id  text,
    run_id     text,
    network    text NOT NULL DEFAULT '',
    agent      text NOT NULL DEFAULT '',
    status     text NOT NULL CHECK (status IN ('pending', 'decided', 'superseded')),
    payload    jsonb NOT NULL,  -- what the person is shown, versioned per kind
    decision   jsonb,           -- set when the status leaves pending
    outcome    jsonb,
    created_at timestamptz NOT NULL,
    decided_at timestamptz,
    PRIMARY KEY (owner_id, id),
    FOREIGN KEY (thread_id, owner_id) REFERENCES threads (id, owner_id) ON DELETE CASCADE
);

CREATE INDEX interrupts_thread_idx ON interrupts (thread_id, created_at) WHERE thread_id IS NOT NULL;
-- A thread has at most one pending thread handoff proposal.
CREATE UNIQUE INDEX interrupts_thread_handoff_pending_idx ON interrupts (owner_id, thread_id)
    WHERE kind = 'thread_handoff' AND status = 'pending';

ALTER TABLE interrupts ENABLE ROW LEVEL SECURITY;
ALTER TABLE interrupts FORCE ROW LEVEL SECURITY;
CREATE POLICY interrupts_owner ON interrupts
    USING (owner_id = current_setting('baton.owner', true));
