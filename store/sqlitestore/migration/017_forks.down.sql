DROP TRIGGER threads_delete_forks;
DROP INDEX threads_fork_idx;
ALTER TABLE threads DROP COLUMN fork_seq;
ALTER TABLE threads DROP COLUMN fork_of;
