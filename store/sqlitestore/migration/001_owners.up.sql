-- Owners (tenants) and their API keys. Times are microseconds since the
-- Unix epoch, UTC.
CREATE TABLE owners (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY,
    owner_id   TEXT NOT NULL REFERENCES owners (id) ON DELETE CASCADE,
    name       TEXT NOT NULL DEFAULT '',
    prefix     TEXT NOT NULL,
    key_hash   TEXT NOT NULL UNIQUE, -- hex SHA-256 of the secret
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
) STRICT;

CREATE INDEX api_keys_owner_idx ON api_keys (owner_id, created_at);
