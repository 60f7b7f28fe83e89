-- Run checkpoints and background job runs.
CREATE TABLE checkpoints (
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- write order
    id          text NOT NULL UNIQUE,
    owner_id    text NOT NULL,
    thread_id   text,
    run_id      text NOT NULL,
    parent_id   text,
    step        bigint NOT NULL,
    status      text NOT NULL,
    fingerprint text NOT NULL,         -- network version the state was written under
    network     text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL,
    state       bytea NOT NULL,        -- runstate.Encode
    UNIQUE (owner_id, run_id, step),
    FOREIGN KEY (thread_id, owner_id) REFERENCES threads (id, owner_id) ON DELETE CASCADE
);

CREATE INDEX checkpoints_thread_idx ON checkpoints (thread_id, seq) WHERE thread_id IS NOT NULL;

ALTER TABLE checkpoints ENABLE ROW LEVEL SECURITY;
ALTER TABLE checkpoints FORCE ROW LEVEL SECURITY;
CREATE POLICY checkpoints_owner ON checkpoints
    USING (owner_id = current_setting('baton.owner', true));

CREATE TABLE job_runs (
    id              text PRIMARY KEY,
    owner_id        text NOT NULL,
    idempotency_key text NOT NULL,
    kind            text NOT NULL,
    thread_id       text,
    status          text NOT NULL
                    CHECK (status IN ('queued', 'processing', 'completed', 'error', 'canceled')),
    attempt         integer NOT NULL DEFAULT 0,
    error           text NOT NULL DEFAULT '',
    metadata        jsonb NOT NULL DEFAULT '{}',
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    started_at      timestamptz,
    finished_at     timestamptz,
    UNIQUE (owner_id, idempotency_key),
    FOREIGN KEY (thread_id, owner_id) REFERENCES threads (id, owner_id) ON DELETE CASCADE
);

CREATE INDEX job_runs_thread_idx ON job_runs (thread_id, created_at) WHERE thread_id IS NOT NULL;

ALTER TABLE job_runs ENABLE ROW LEVEL SECURITY;
ALTER TABLE job_runs FORCE ROW LEVEL SECURITY;
CREATE POLICY job_runs_owner ON job_runs
    USING (owner_id = current_setting('baton.owner', true));
