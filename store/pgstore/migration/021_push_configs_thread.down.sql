DROP INDEX push_configs_thread_idx;
ALTER TABLE push_configs DROP CONSTRAINT push_configs_thread_fkey;
