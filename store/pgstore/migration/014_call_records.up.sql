-- The calls of runs, recorded for the inspector (issue 35): each model call
-- with its request as sent and its answer, each tool call, each transfer,
-- written in the transaction of the checkpoint that follows it. detail is
-- the JSON of the call (request, answer, arguments, output, retries),
-- capped per call by its writer; the other columns are what a run's steps
-- list. Deleted with their thread, and after the retention period by the
-- sweeper (baton.sweep, across owners: it deletes by age and reads nothing
-- else).
CREATE TABLE call_records (
    id               text NOT NULL,
    owner_id         text NOT NULL,
    thread_id        text,
    run_id           text NOT NULL,
    checkpoint_id    text NOT NULL DEFAULT '',
    step             bigint NOT NULL DEFAULT 0,
    kind             text NOT NULL CHECK (kind IN ('model', 'tool', 'agent_tool', 'transfer')),
    agent            text NOT NULL DEFAULT '',
    sub              smallint NOT NULL DEFAULT 0,
    model            text NOT NULL DEFAULT '',
    name             text NOT NULL DEFAULT '',
    call_id          text NOT NULL DEFAULT '',
    error            text NOT NULL DEFAULT '',
    finish_reason    text NOT NULL DEFAULT '',
    request_id       text NOT NULL DEFAULT '',
    started_at       timestamptz NOT NULL,
    first_token_us   bigint NOT NULL DEFAULT 0,
    latency_us       bigint NOT NULL DEFAULT 0,
    input_tokens     bigint NOT NULL DEFAULT 0,
    output_tokens    bigint NOT NULL DEFAULT 0,
    cached_tokens    bigint NOT NULL DEFAULT 0,
    reasoning_tokens bigint NOT NULL DEFAULT 0,
    truncated        smallint NOT NULL DEFAULT 0,
    detail           text NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL,
    PRIMARY KEY (owner_id, id),
    FOREIGN KEY (thread_id, owner_id) REFERENCES threads (id, owner_id) ON DELETE CASCADE
);

CREATE INDEX call_records_run_idx ON call_records (owner_id, run_id, started_at);
CREATE INDEX call_records_thread_idx ON call_records (thread_id) WHERE thread_id IS NOT NULL;
CREATE INDEX call_records_created_idx ON call_records (created_at);

ALTER TABLE call_records ENABLE ROW LEVEL SECURITY;
ALTER TABLE call_records FORCE ROW LEVEL SECURITY;
CREATE POLICY call_records_owner ON call_records
    USING (owner_id = current_setting('baton.owner', true));
CREATE POLICY call_records_sweep ON call_records FOR DELETE
    USING (current_setting('baton.sweep', true) = 'on');
CREATE POLICY call_records_sweep_read ON call_records FOR SELECT
    USING (current_setting('baton.sweep', true) = 'on');
