package continuation

import (
	"context"
	"log/slog"

	"github.com/riverqueue/river"
)

// deliveryLog is the logger of a delivery: the service's, with the
// delivery's run, thread, continuation, job and attempt, made on the
// delivery's first record its handler takes. A delivery that logs nothing
// (a continuation's usual path) formats none of them: [slog.Logger.With]
// has its handler format them at once. Not safe for concurrent use: a
// delivery logs from its own goroutine.
type deliveryLog struct {
	base *slog.Logger
	job  *river.Job[Args]
	l    *slog.Logger
}

func (d *deliveryLog) log(ctx context.Context, level slog.Level, msg string, args ...any) {
	if !d.base.Enabled(ctx, level) {
		return
	}
	if d.l == nil {
		a, job := d.job.Args, d.job
		d.l = d.base.With("run_id", a.RunID, "thread_id", a.ThreadID, "continuation_id", a.EventID, "job_id", job.ID, "river_attempt", job.Attempt)
	}
	d.l.Log(ctx, level, msg, args...)
}

// DebugContext logs at [slog.LevelDebug].
func (d *deliveryLog) DebugContext(ctx context.Context, msg string, args ...any) {
	d.log(ctx, slog.LevelDebug, msg, args...)
}

// InfoContext logs at [slog.LevelInfo].
func (d *deliveryLog) InfoContext(ctx context.Context, msg string, args ...any) {
	d.log(ctx, slog.LevelInfo, msg, args...)
}

// WarnContext logs at [slog.LevelWarn].
func (d *deliveryLog) WarnContext(ctx context.Context, msg string, args ...any) {
	d.log(ctx, slog.LevelWarn, msg, args...)
}

// ErrorContext logs at [slog.LevelError].
func (d *deliveryLog) ErrorContext(ctx context.Context, msg string, args ...any) {
	d.log(ctx, slog.LevelError, msg, args...)
}
