-- Leases on running runs: the process executing a run inline holds one,
-- renewed while the run goes on; a run whose lease expired lost its process
-- and is adopted by another one (package continuation).
CREATE TABLE run_leases (
    owner_id   text NOT NULL,
    run_id     text NOT NULL,
    thread_id  text,
    holder     text NOT NULL,        -- the process: host, pid and a random part
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (owner_id, run_id),
    FOREIGN KEY (thread_id, owner_id) REFERENCES threads (id, owner_id) ON DELETE CASCADE
);

CREATE INDEX run_leases_expiry_idx ON run_leases (expires_at);

ALTER TABLE run_leases ENABLE ROW LEVEL SECURITY;
ALTER TABLE run_leases FORCE ROW LEVEL SECURITY;
CREATE POLICY run_leases_owner ON run_leases
    USING (owner_id = current_setting('baton.owner', true));
-- Renewing a process's leases and finding expired ones span owners; pgstore
-- sets baton.leases for those two calls only. The rows hold ids and times,
-- nothing of a conversation.
CREATE POLICY run_leases_sweep ON run_leases
    USING (current_setting('baton.leases', true) = 'on');
