-- Owners (tenants) and their API keys.
--
-- Row-level security: every owner-scoped table has RLS enabled and forced,
-- with a policy comparing its owner to current_setting('baton.owner', true),
-- which pgstore sets per transaction with set_config(..., true).
CREATE TABLE owners (
    id         text PRIMARY KEY,
    name       text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL
);

ALTER TABLE owners ENABLE ROW LEVEL SECURITY;
ALTER TABLE owners FORCE ROW LEVEL SECURITY;
CREATE POLICY owners_owner ON owners
    USING (id = current_setting('baton.owner', true));

CREATE TABLE api_keys (
    id         text PRIMARY KEY,
    owner_id   text NOT NULL REFERENCES owners (id) ON DELETE CASCADE,
    name       text NOT NULL DEFAULT '',
    prefix     text NOT NULL,
    key_hash   text NOT NULL UNIQUE, -- hex SHA-256 of the secret
    created_at timestamptz NOT NULL,
    revoked_at timestamptz
);

CREATE INDEX api_keys_owner_idx ON api_keys (owner_id, created_at);

ALTER TABLE api_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY api_keys_owner ON api_keys
    USING (owner_id = current_setting('baton.owner', true));
-- Authentication finds a key, and so its owner, by the hash of the secret
-- presented; pgstore sets baton.api_key_hash for that one lookup.
CREATE POLICY api_keys_lookup ON api_keys FOR SELECT
    USING (key_hash = current_setting('baton.api_key_hash', true));
