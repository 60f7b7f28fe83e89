-- Checkpoint retention (issue 40): the background sweep deletes, across
-- owners, the checkpoints retention no longer keeps (store.PruneCheckpoints:
-- every run's latest stays). pgstore sets baton.sweep for the sweeps only
-- (014's call records share it); the sweep reads ids, runs, steps and
-- times, and returns nothing of a conversation.
CREATE POLICY checkpoints_sweep ON checkpoints FOR DELETE
    USING (current_setting('baton.sweep', true) = 'on');
CREATE POLICY checkpoints_sweep_read ON checkpoints FOR SELECT
    USING (current_setting('baton.sweep', true) = 'on');
