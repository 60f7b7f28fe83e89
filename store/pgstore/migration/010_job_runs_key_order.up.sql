-- job_runs' idempotency key leads its unique index (issue 18).
--
-- UNIQUE (owner_id, idempotency_key) let the planner find a job run by
-- (owner_id, id) through that index, on owner_id alone, reading every job
-- run of the owner and filtering on id. It does so on a table too small for
-- its estimates to tell the indexes apart (a new database: the generic plan
-- a connection makes then stays until the table is analysed): the
-- finalisation of a continuation then read every earlier job run of its
-- owner (measured: up to 1 160 index entries per statement in a 1 160-
-- continuation benchmark). Every query by idempotency key names the owner
-- too, and ON CONFLICT (owner_id, idempotency_key) infers the index whatever
-- its column order, so with the key first a lookup by owner and id has only
-- the primary key to use.
ALTER TABLE job_runs DROP CONSTRAINT job_runs_owner_id_idempotency_key_key;
ALTER TABLE job_runs ADD CONSTRAINT job_runs_owner_id_idempotency_key_key UNIQUE (idempotency_key, owner_id);
