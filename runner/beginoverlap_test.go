package runner_test

import (
	"context"
	"errors"
	"iter"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
)

// called signals its first Stream call, then streams m.
type called struct {
	ch chan struct{}
	m  model.Model
	// ctxErr is the model's context's error once its stream ended.
	ctxErr atomic.Value
}

func (c *called) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		select {
		case <-c.ch:
		default:
			close(c.ch)
		}
		for ch, err := range c.m.Stream(ctx, req) {
			if !yield(ch, err) {
				break
			}
		}
		<-ctx.Done()
		c.ctxErr.Store(ctx.Err())
	}
}

// TestStreamBeginOverlapsFirstModelCall: a streamed new run's first model
// call starts while its first checkpoint commits, and no event comes
// before that commit; when the checkpoint fails, the model call is
// cancelled and the run did not start (no event, only the error).
func TestStreamBeginOverlapsFirstModelCall(t *testing.T) {
	t.Parallel()
	for _, fail := range []bool{false, true} {
		name := "commits"
		if fail {
			name = "fails"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := &called{ch: make(chan struct{}), m: scripted.New("a", []scripted.Step{{Text: "hello there"}}, scripted.Options{ChunkWords: 1})}
			a := &agent.Agent{Name: "a", Instructions: "You are a.", Model: m, ModelName: "scripted"}
			var committed atomic.Bool
			writes := 0
			errRefused := errors.New("refused")
			ck := runner.CheckpointFunc(func(ctx context.Context, st *runstate.State) error {
				writes++
				if writes == 1 {
					// The first checkpoint waits for the model's call.
					select {
					case <-m.ch:
					case <-time.After(10 * time.Second):
						t.Error("the model was not called while the first checkpoint was being written")
					}
					if fail {
						return errRefused
					}
					committed.Store(true)
				}
				return nil
			})
			r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a), Checkpointer: ck})
			var evs []runner.Event
			var runErr error
			for ev, err := range r.Stream(context.Background(), "hi") {
				if err != nil {
					runErr = err
					break
				}
				if !committed.Load() {
					t.Errorf("event %s before the first checkpoint committed", ev.EventType())
				}
				evs = append(evs, ev)
			}
			if !fail {
				if runErr != nil {
					t.Fatal(runErr)
				}
				if len(ofType[*runner.TextDeltaEvent](evs)) == 0 || evs[0].EventType() != runner.TypeRunStart {
					t.Fatalf("events %v", evs)
				}
				for i, ev := range evs {
					if got := ev.Sequence(); got != i+1 {
						t.Errorf("event %d (%s) has seq %d", i, ev.EventType(), got)
					}
				}
				return
			}
			if !errors.Is(runErr, errRefused) || len(evs) != 0 || writes != 1 {
				t.Fatalf("events %v, error %v, writes %d: want no event, the checkpoint's error, one write", evs, runErr, writes)
			}
			if err, _ := m.ctxErr.Load().(error); !errors.Is(err, context.Canceled) {
				t.Errorf("the model's context: %v, want cancelled", err)
			}
		})
	}
}
