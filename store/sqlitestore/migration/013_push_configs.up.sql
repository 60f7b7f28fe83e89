-- A2A push notification configs (issue 39): where a task's (a run's)
-- updates go, with the receiver's token and authentication and the
-- protocol version of the payload (created_at in microseconds since the
-- epoch). Deliveries go through the webhook jobs.
CREATE TABLE push_configs (
    owner_id         TEXT NOT NULL REFERENCES owners (id) ON DELETE CASCADE,
    run_id           TEXT NOT NULL,
    id               TEXT NOT NULL,
    thread_id        TEXT NOT NULL DEFAULT '',
    network          TEXT NOT NULL DEFAULT '',
    url              TEXT NOT NULL,
    token            TEXT NOT NULL DEFAULT '',
    auth_scheme      TEXT NOT NULL DEFAULT '',
    auth_credentials TEXT NOT NULL DEFAULT '',
    protocol         TEXT NOT NULL,
    created_at       INTEGER NOT NULL,
    PRIMARY KEY (owner_id, run_id, id)
) STRICT;
