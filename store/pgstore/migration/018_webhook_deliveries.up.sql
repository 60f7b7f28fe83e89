-- The webhook delivery log (issue 39): one row per attempt to deliver a
-- run event, with the receiver's status or the error. Rows are never
-- changed.
CREATE TABLE webhook_deliveries (
    id          text NOT NULL,
    owner_id    text NOT NULL REFERENCES owners (id) ON DELETE CASCADE,
    webhook_id  text NOT NULL,
    event_type  text NOT NULL,
    url         text NOT NULL,
    thread_id   text NOT NULL DEFAULT '',
    run_id      text NOT NULL DEFAULT '',
    network     text NOT NULL DEFAULT '',
    attempt     integer NOT NULL DEFAULT 0,
    status_code integer NOT NULL DEFAULT 0,
    error       text NOT NULL DEFAULT '',
    duration_us bigint NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (owner_id, id)
);

CREATE INDEX webhook_deliveries_run_idx ON webhook_deliveries (owner_id, run_id, id);

ALTER TABLE webhook_deliveries ENABLE ROW LEVEL SECURITY;
ALTER TABLE webhook_deliveries FORCE ROW LEVEL SECURITY;
CREATE POLICY webhook_deliveries_owner ON webhook_deliveries
    USING (owner_id = current_setting('baton.owner', true));
