-- A2A push notification configs (issue 39): where a task's (a run's)
-- updates go, with the receiver's token and authentication and the
-- protocol version of the payload. Deliveries go through the webhook jobs.
CREATE TABLE push_configs (
    owner_id         text NOT NULL REFERENCES owners (id) ON DELETE CASCADE,
    run_id           text NOT NULL,
    id               text NOT NULL,
    thread_id        text NOT NULL DEFAULT '',
    network          text NOT NULL DEFAULT '',
    url              text NOT NULL,
    token            text NOT NULL DEFAULT '',
    auth_scheme      text NOT NULL DEFAULT '',
    auth_credentials text NOT NULL DEFAULT '',
    protocol         text NOT NULL,
    created_at       timestamptz NOT NULL,
    PRIMARY KEY (owner_id, run_id, id)
);

ALTER TABLE push_configs ENABLE ROW LEVEL SECURITY;
ALTER TABLE push_configs FORCE ROW LEVEL SECURITY;
CREATE POLICY push_configs_owner ON push_configs
    USING (owner_id = current_setting('baton.owner', true));
