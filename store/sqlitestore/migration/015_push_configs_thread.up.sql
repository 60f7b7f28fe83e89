-- A2A push notification configs are deleted with their thread (issue 39),
-- as its runs, checkpoints and call records are: a foreign key to threads
-- with ON DELETE CASCADE (a run is deleted only with its thread). SQLite
-- adds a foreign key by making the table anew; configs whose thread is
-- already gone never match a run event again and are not copied.
CREATE TABLE push_configs_new (
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
    PRIMARY KEY (owner_id, run_id, id),
    FOREIGN KEY (thread_id, owner_id) REFERENCES threads (id, owner_id) ON DELETE CASCADE
) STRICT;

INSERT INTO push_configs_new SELECT c.* FROM push_configs AS c
    WHERE EXISTS (SELECT 1 FROM threads AS t WHERE t.id = c.thread_id AND t.owner_id = c.owner_id);
DROP TABLE push_configs;
ALTER TABLE push_configs_new RENAME TO push_configs;
CREATE INDEX push_configs_thread_idx ON push_configs (thread_id);
