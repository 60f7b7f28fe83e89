DROP POLICY checkpoints_sweep_read ON checkpoints;
DROP POLICY checkpoints_sweep ON checkpoints;
