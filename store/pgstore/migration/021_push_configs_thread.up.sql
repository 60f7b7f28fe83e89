-- A2A push notification configs are deleted with their thread (issue 39),
-- as its runs, checkpoints and call records are: a foreign key to threads
-- with ON DELETE CASCADE (a run is deleted only with its thread). Configs
-- whose thread is already gone never match a run event again and are
-- deleted first. The migrating role owns both tables: row-level security
-- is lifted for it (NO FORCE) while it reads and deletes across owners,
-- and forced again.
ALTER TABLE push_configs NO FORCE ROW LEVEL SECURITY;
ALTER TABLE threads NO FORCE ROW LEVEL SECURITY;
DELETE FROM push_configs AS c
    WHERE NOT EXISTS (SELECT 1 FROM threads AS t WHERE t.id = c.thread_id AND t.owner_id = c.owner_id);
ALTER TABLE threads FORCE ROW LEVEL SECURITY;
ALTER TABLE push_configs FORCE ROW LEVEL SECURITY;

ALTER TABLE push_configs ADD CONSTRAINT push_configs_thread_fkey
    FOREIGN KEY (thread_id, owner_id) REFERENCES threads (id, owner_id) ON DELETE CASCADE;
CREATE INDEX push_configs_thread_idx ON push_configs (thread_id);
