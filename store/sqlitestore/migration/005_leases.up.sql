-- Leases on running runs: the process executing a run inline holds one,
-- renewed while the run goes on; a run whose lease expired lost its process
-- and is adopted by another one (package continuation).
CREATE TABLE run_leases (
    owner_id   TEXT NOT NULL,
    run_id     TEXT NOT NULL,
    thread_id  TEXT,
    holder     TEXT NOT NULL,    -- the process: host, pid and a random part
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (owner_id, run_id),
    FOREIGN KEY (thread_id, owner_id) REFERENCES threads (id, owner_id) ON DELETE CASCADE
) STRICT;

CREATE INDEX run_leases_expiry_idx ON run_leases (expires_at);
