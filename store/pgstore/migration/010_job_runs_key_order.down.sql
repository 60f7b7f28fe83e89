ALTER TABLE job_runs DROP CONSTRAINT job_runs_owner_id_idempotency_key_key;
ALTER TABLE job_runs ADD CONSTRAINT job_runs_owner_id_idempotency_key_key UNIQUE (owner_id, idempotency_key);
