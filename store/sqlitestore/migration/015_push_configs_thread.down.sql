CREATE TABLE push_configs_old (
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

INSERT INTO push_configs_old SELECT * FROM push_configs;
DROP TABLE push_configs;
ALTER TABLE push_configs_old RENAME TO push_configs;
