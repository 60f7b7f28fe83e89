ALTER TABLE api_keys DROP COLUMN expires_at;
ALTER TABLE api_keys DROP COLUMN networks;
ALTER TABLE api_keys DROP COLUMN scopes;
