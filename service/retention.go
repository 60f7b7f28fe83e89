package service

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/batonhq/baton/store"
)

// DefaultCheckpointRetention is how long checkpoints are kept by default
// (Config.CheckpointRetention): 30 days.
const DefaultCheckpointRetention = 30 * 24 * time.Hour

// retentionPause is the pause between two batches of a sweep, so that the
// sweep never holds the database (SQLite's single writer above all) for
// long: a batch is one short transaction.
const retentionPause = 50 * time.Millisecond

// checkpointSweeper deletes, in the background, the checkpoints that retention no
// longer keeps (store.Store.PruneCheckpoints: every run's latest and every
// checkpoint written within the period are kept): a sweep when it starts,
// then one every period/30 (at least a minute, at most an hour), each in
// batches of store.DefaultPruneLimit checkpoints.
type checkpointSweeper struct {
	st     store.Store
	period time.Duration
	every  time.Duration
	log    *slog.Logger
	now    func() time.Time

	cancel context.CancelFunc
	done   sync.WaitGroup
}

// newCheckpointSweeper returns the sweeper of st for period (0: the default;
// negative: none, nil).
func newCheckpointSweeper(st store.Store, period time.Duration, log *slog.Logger) *checkpointSweeper {
	if period < 0 {
		return nil
	}
	if period == 0 {
		period = DefaultCheckpointRetention
	}
	return &checkpointSweeper{st: st, period: period, every: min(max(period/30, time.Minute), time.Hour), log: log, now: time.Now}
}

// start starts the sweeps; stop ends them.
func (r *checkpointSweeper) start(ctx context.Context) {
	if r == nil {
		return
	}
	ctx, r.cancel = context.WithCancel(ctx)
	r.done.Go(func() {
		t := time.NewTimer(0)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if n, err := r.sweep(ctx); err != nil && ctx.Err() == nil {
				r.log.WarnContext(ctx, "checkpoint retention", "error", err, "deleted", n)
			} else if n > 0 {
				r.log.InfoContext(ctx, "checkpoint retention", "deleted", n, "older_than", r.period)
			}
			t.Reset(r.every)
		}
	})
}

// stop ends the sweeps and waits for a batch in progress.
func (r *checkpointSweeper) stop() {
	if r == nil || r.cancel == nil {
		return
	}
	r.cancel()
	r.done.Wait()
	r.cancel = nil
}

// sweep walks every checkpoint once, batch after batch, and returns how
// many it deleted.
func (r *checkpointSweeper) sweep(ctx context.Context) (int, error) {
	p := &store.PruneCheckpointsParams{Before: r.now().Add(-r.period)}
	deleted := 0
	for {
		res, err := r.st.PruneCheckpoints(ctx, p)
		if err != nil {
			return deleted, err
		}
		deleted += res.Deleted
		if res.Next == "" {
			return deleted, nil
		}
		p.After = res.Next
		select {
		case <-ctx.Done():
			return deleted, ctx.Err()
		case <-time.After(retentionPause):
		}
	}
}
