-- The audit log (issue 39): every decision on an interrupt (a run's
-- approvals with the edited arguments, a thread handoff's), every cancel,
-- every API key created or revoked, with the key that acted, the request
-- and the time (microseconds since the epoch). Decisions are written in
-- the transaction that decides the interrupt. Rows are never changed.
CREATE TABLE audit_events (
    id           TEXT NOT NULL,
    owner_id     TEXT NOT NULL REFERENCES owners (id) ON DELETE CASCADE,
    kind         TEXT NOT NULL,
    key_id       TEXT NOT NULL DEFAULT '',
    actor        TEXT NOT NULL DEFAULT '',
    request_id   TEXT NOT NULL DEFAULT '',
    thread_id    TEXT NOT NULL DEFAULT '',
    run_id       TEXT NOT NULL DEFAULT '',
    interrupt_id TEXT NOT NULL DEFAULT '',
    network      TEXT NOT NULL DEFAULT '',
    detail       TEXT,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (owner_id, id)
) STRICT;

CREATE INDEX audit_events_thread_idx ON audit_events (owner_id, thread_id, id);
