package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
)

// refuseSuspension is a checkpointer whose hand-over to a worker fails.
type refuseSuspension struct {
	memCheckpoints
	err error
}

func (c *refuseSuspension) Checkpoint(ctx context.Context, st *runstate.State) error {
	if st.Status == runstate.StatusSuspended {
		return c.err
	}
	return c.memCheckpoints.Checkpoint(ctx, st)
}

func TestBackgroundFallback(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name       string
		notice     func(context.Context, error) string
		wantNotice string
	}{
		{name: "DefaultNotice", wantNotice: runner.DefaultFallbackNotice},
		{name: "CustomNotice", notice: func(context.Context, error) string { return "queue down" }, wantNotice: "queue down"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var runs atomic.Int32
			a, rec := ag("a", calls("report", `{"q":1}`), text("Sorry, the report could not run."))
			a.Tools = []*agent.Tool{{Name: "report", Slow: true, Func: func(context.Context, json.RawMessage) (string, error) {
				runs.Add(1)
				return "42 pages", nil
			}}}
			cause := errors.New("enqueue: queue down")
			ck := &refuseSuspension{err: cause}
			r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a), Checkpointer: ck})
			var told error
			notice := tt.notice
			if notice != nil {
				notice = func(ctx context.Context, err error) string { told = err; return tt.notice(ctx, err) }
			}
			opts := []runner.RunOption{runner.WithRunID("r1"), runner.WithBackgroundBoundary(), runner.WithBackgroundFallback(notice)}
			evs := mustCollect(t, r.Stream(t.Context(), "make a report", opts...))
			end := ofType[*runner.RunEndEvent](evs)
			if len(end) != 1 || end[0].Status != runstate.StatusCompleted || end[0].Output != "Sorry, the report could not run." {
				t.Fatalf("run_end = %+v", end)
			}
			if runs.Load() != 0 {
				t.Errorf("the slow tool ran %d times inline", runs.Load())
			}
			if tt.notice != nil && !errors.Is(told, cause) {
				t.Errorf("notice was told %v, want %v", told, cause)
			}
			for i, ev := range evs {
				if ev.Sequence() != i+1 {
					t.Fatalf("event %d (%s) has seq %d", i, ev.EventType(), ev.Sequence())
				}
			}
			res := ofType[*runner.ToolResultEvent](evs)
			if len(res) != 1 || res[0].Error != tt.wantNotice {
				t.Errorf("tool results = %+v, want the notice", res)
			}
			last := rec.last(t)
			if len(last.Tools) != 0 {
				t.Errorf("the fallback call offered %d tools", len(last.Tools))
			}
			st := ck.Latest(t)
			if st.Status != runstate.StatusCompleted || len(st.Pending) != 0 {
				t.Errorf("final checkpoint = %s with %d pending", st.Status, len(st.Pending))
			}
			if p := toolResults(st.Transcript)["call_a_1_1"]; p.Text != tt.wantNotice || !p.IsError {
				t.Errorf("stored tool result = %+v", p)
			}
		})
	}
}

func TestBackgroundFallbackNotSetFails(t *testing.T) {
	t.Parallel()
	a, _ := ag("a", calls("report", `{}`), text("never"))
	a.Tools = []*agent.Tool{{Name: "report", Slow: true, Func: func(context.Context, json.RawMessage) (string, error) { return "x", nil }}}
	cause := errors.New("enqueue: queue down")
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a), Checkpointer: &refuseSuspension{err: cause}})
	_, err := r.Run(t.Context(), "go", runner.WithBackgroundBoundary())
	if !errors.Is(err, cause) || runner.KindOf(err) != runner.KindSystem {
		t.Fatalf("err = %v, want the hand-over error (system)", err)
	}
}

// supersededError is a checkpoint refused because another writer took the
// run's place (as the store's *StaleWriteError).
type supersededError struct{}

func (supersededError) Error() string    { return "stale checkpoint write" }
func (supersededError) Superseded() bool { return true }

// TestBackgroundFallbackNotWhenSuperseded: a suspension whose checkpoint
// another writer superseded stops the run with that error: no fallback, no
// model call without tools.
func TestBackgroundFallbackNotWhenSuperseded(t *testing.T) {
	t.Parallel()
	a, rec := ag("a", calls("report", `{}`), text("never"))
	a.Tools = []*agent.Tool{{Name: "report", Slow: true, Func: func(context.Context, json.RawMessage) (string, error) { return "x", nil }}}
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a), Checkpointer: &refuseSuspension{err: fmt.Errorf("save: %w", supersededError{})}})
	told := false
	_, err := r.Run(t.Context(), "go", runner.WithBackgroundBoundary(),
		runner.WithBackgroundFallback(func(context.Context, error) string { told = true; return "" }))
	if !errors.As(err, new(supersededError)) || runner.KindOf(err) != runner.KindSystem {
		t.Fatalf("err = %v, want the superseded checkpoint's (system)", err)
	}
	if told || len(rec.requests()) != 1 {
		t.Errorf("fallback told %v, model called %d times; want no fallback and one call", told, len(rec.requests()))
	}
}
