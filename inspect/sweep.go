package inspect

import (
	"context"
	"log/slog"
	"time"

	"github.com/batonhq/baton/internal/periodic"
	"github.com/batonhq/baton/store"
)

// DefaultRetention is how long call records are kept by default.
const DefaultRetention = 7 * 24 * time.Hour

// SweepEvery is how often [Sweep] deletes the records past retention: a
// tenth of it, at least a second and at most an hour.
func SweepEvery(retention time.Duration) time.Duration {
	return min(max(retention/10, time.Second), time.Hour)
}

// Sweep deletes the call records of every owner created more than
// retention ago, at once and then every interval, until ctx ends. Errors
// are logged and retried at the next interval. Several processes on one
// database may sweep at once.
func Sweep(ctx context.Context, st store.Store, retention, every time.Duration, log *slog.Logger) {
	periodic.NowAndEvery(ctx, every, func(ctx context.Context) {
		n, err := st.SweepCallRecords(ctx, &store.SweepCallRecordsParams{Before: time.Now().Add(-retention)})
		switch {
		case ctx.Err() != nil:
		case err != nil:
			log.WarnContext(ctx, "inspect: sweep call records", "error", err)
		case n > 0:
			log.DebugContext(ctx, "inspect: swept call records", "deleted", n)
		}
	})
}
