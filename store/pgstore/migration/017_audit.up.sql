-- The audit log (issue 39): every decision on an interrupt (a run's
-- approvals with the edited arguments, a thread handoff's), every cancel,
-- every API key created or revoked, with the key that acted, the request
-- and the time. Decisions are written in the transaction that decides the
-- interrupt. Rows are never changed. Not deleted with their thread: the
-- log outlives what it records.
CREATE TABLE audit_events (
    id           text NOT NULL,
    owner_id     text NOT NULL REFERENCES owners (id) ON DELETE CASCADE,
    kind         text NOT NULL,
    key_id       text NOT NULL DEFAULT '',
    actor        text NOT NULL DEFAULT '',
    request_id   text NOT NULL DEFAULT '',
    thread_id    text NOT NULL DEFAULT '',
    run_id       text NOT NULL DEFAULT '',
    interrupt_id text NOT NULL DEFAULT '',
    network      text NOT NULL DEFAULT '',
    detail       jsonb,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (owner_id, id)
);

CREATE INDEX audit_events_thread_idx ON audit_events (owner_id, thread_id, id);

ALTER TABLE audit_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_events FORCE ROW LEVEL SECURITY;
CREATE POLICY audit_events_owner ON audit_events
    USING (owner_id = current_setting('baton.owner', true));
