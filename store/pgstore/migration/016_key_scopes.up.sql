-- Scoped, expiring API keys (issue 39). scopes is the key's scopes,
-- space-separated (read, run, decide, admin: each includes the ones before
-- it); a key made before scopes existed is admin, the full rights it had.
-- networks, space-separated, limits the key to those networks' threads; ''
-- is every network. expires_at NULL never expires.
ALTER TABLE api_keys ADD COLUMN scopes text NOT NULL DEFAULT 'admin';
ALTER TABLE api_keys ADD COLUMN networks text NOT NULL DEFAULT '';
ALTER TABLE api_keys ADD COLUMN expires_at timestamptz;
