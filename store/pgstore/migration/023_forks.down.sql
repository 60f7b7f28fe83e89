DROP TRIGGER "Fork_rows_of_deleted_thread" ON threads;
DROP FUNCTION forks_of_deleted_thread();
DROP INDEX threads_fork_idx;
ALTER TABLE threads DROP COLUMN fork_seq, DROP COLUMN fork_of;
