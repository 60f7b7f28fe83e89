DROP TABLE job_runs;
DROP TABLE checkpoints;
