-- The webhook delivery log (issue 39): one row per attempt to deliver a
-- run event, with the receiver's status or the error (created_at in
-- microseconds since the epoch). Rows are never changed.
CREATE TABLE webhook_deliveries (
    id          TEXT NOT NULL,
    owner_id    TEXT NOT NULL REFERENCES owners (id) ON DELETE CASCADE,
    webhook_id  TEXT NOT NULL,
    event_type  TEXT NOT NULL,
    url         TEXT NOT NULL,
    thread_id   TEXT NOT NULL DEFAULT '',
    run_id      TEXT NOT NULL DEFAULT '',
    network     TEXT NOT NULL DEFAULT '',
    attempt     INTEGER NOT NULL DEFAULT 0,
    status_code INTEGER NOT NULL DEFAULT 0,
    error       TEXT NOT NULL DEFAULT '',
    duration_us INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (owner_id, id)
) STRICT;

CREATE INDEX webhook_deliveries_run_idx ON webhook_deliveries (owner_id, run_id, id);
