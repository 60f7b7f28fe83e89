package service

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/batonhq/baton/internal/periodic"
	"github.com/batonhq/baton/store"
)

// DefaultCheckpointRetention is how long checkpoints are kept by default
// (Config.CheckpointRetention): 30 days.
const DefaultCheckpointRetention = 30 * 24 * time.Hour

// retentionPause is the pause between two batches of a sweep, so that the
// sweep never holds the database (SQLite's single writer above all) for
// long: a batch is one short transaction.
const retentionPause = 50 * time.Millisecond

// DefaultWebhookRetention is how long the webhook delivery log keeps a
// delivery that ended by default (Config.WebhookRetention): 7 days.
const DefaultWebhookRetention = 7 * 24 * time.Hour

// pruneFunc deletes one batch of what retention no longer keeps:
// store.Store.PruneCheckpoints or PruneWebhookDeliveries.
type pruneFunc func(ctx context.Context, before time.Time, after string) (*store.PruneCheckpointsResult, error)

// sweeper deletes, in the background, what a retention no longer keeps (the
// checkpoints: every run's latest and every checkpoint written within the
// period are kept; the webhook delivery log: a pending delivery's attempts
// and those of a delivery that ended within the period are kept): a sweep
// when it starts, then one every period/30 (at least a minute, at most an
// hour), each in batches of store.DefaultPruneLimit rows.
type sweeper struct {
	what   string
	prune  pruneFunc
	period time.Duration
	every  time.Duration
	log    *slog.Logger
	now    func() time.Time

	cancel context.CancelFunc
	done   sync.WaitGroup
}

// newCheckpointSweeper returns the checkpoints' sweeper of st for period
// (0: the default; negative: none, nil).
func newCheckpointSweeper(st store.Store, period time.Duration, log *slog.Logger) *sweeper {
	if period < 0 {
		return nil
	}
	if period == 0 {
		period = DefaultCheckpointRetention
	}
	return newSweeper("checkpoint retention", func(ctx context.Context, before time.Time, after string) (*store.PruneCheckpointsResult, error) {
		return st.PruneCheckpoints(ctx, &store.PruneCheckpointsParams{Before: before, After: after})
	}, period, log)
}

// newWebhookSweeper returns the webhook delivery log's sweeper of st for
// period (0: the default; negative: none kept once the delivery ended).
func newWebhookSweeper(st store.Store, period time.Duration, log *slog.Logger) *sweeper {
	switch {
	case period == 0:
		period = DefaultWebhookRetention
	case period < 0:
		period = 0
	}
	return newSweeper("webhook delivery retention", func(ctx context.Context, before time.Time, after string) (*store.PruneCheckpointsResult, error) {
		return st.PruneWebhookDeliveries(ctx, &store.PruneWebhookDeliveriesParams{Before: before, After: after})
	}, period, log)
}

func newSweeper(what string, prune pruneFunc, period time.Duration, log *slog.Logger) *sweeper {
	return &sweeper{what: what, prune: prune, period: period, every: min(max(period/30, time.Minute), time.Hour), log: log, now: time.Now}
}

// start starts the sweeps; stop ends them.
func (r *sweeper) start(ctx context.Context) {
	if r == nil {
		return
	}
	ctx, r.cancel = context.WithCancel(ctx)
	r.done.Go(func() {
		periodic.NowAndEvery(ctx, r.every, func(ctx context.Context) {
			if n, err := r.sweep(ctx); err != nil && ctx.Err() == nil {
				r.log.WarnContext(ctx, r.what, "error", err, "deleted", n)
			} else if n > 0 {
				r.log.InfoContext(ctx, r.what, "deleted", n, "older_than", r.period)
			}
		})
	})
}

// stop ends the sweeps and waits for a batch in progress.
func (r *sweeper) stop() {
	if r == nil || r.cancel == nil {
		return
	}
	r.cancel()
	r.done.Wait()
	r.cancel = nil
}

// sweep walks every row once, batch after batch, and returns how many it
// deleted.
func (r *sweeper) sweep(ctx context.Context) (int, error) {
	before, after := r.now().Add(-r.period), ""
	deleted := 0
	for {
		res, err := r.prune(ctx, before, after)
		if err != nil {
			return deleted, err
		}
		deleted += res.Deleted
		if res.Next == "" {
			return deleted, nil
		}
		after = res.Next
		select {
		case <-ctx.Done():
			return deleted, ctx.Err()
		case <-time.After(retentionPause):
		}
	}
}
