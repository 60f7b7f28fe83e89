package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/transfer"
)

// txCheckpoints is a runner.TxCheckpointer that records what happened in
// which write.
type txCheckpoints struct {
	memCheckpoints
	fail func(st *runstate.State) error
}

func (c *txCheckpoints) CheckpointTx(ctx context.Context, st *runstate.State, at func(tx any, id string) error) error {
	if c.fail != nil {
		if err := c.fail(st); err != nil {
			return err
		}
	}
	id := fmt.Sprintf("cp%d", st.Step)
	if at != nil {
		if err := at("tx-"+id, id); err != nil {
			return err // rolled back: not saved
		}
	}
	return c.Checkpoint(ctx, st)
}

// traceExt records every point it is called at.
type traceExt struct {
	mu     sync.Mutex
	points []string
}

func (e *traceExt) add(s string) {
	e.mu.Lock()
	e.points = append(e.points, s)
	e.mu.Unlock()
}

func (e *traceExt) ext() runner.Extension {
	return runner.ExtensionFuncs{
		Before: func(_ context.Context, t *runner.Turn) error {
			e.add("before " + t.Run.Agent)
			t.AddSystem("memory of " + t.Run.Agent)
			return nil
		},
		Boundary: func(_ context.Context, b *runner.Boundary) error {
			line := fmt.Sprintf("boundary %d %s first=%v tx=%v id=%s", b.State.Step, b.State.Status, b.First, b.Tx, b.CheckpointID)
			if b.Answered != "" || b.Decisions != nil {
				line += fmt.Sprintf(" answered=%s decisions=%d", b.Answered, len(b.Decisions))
			}
			e.add(line)
			return nil
		},
		After: func(_ context.Context, o *runner.Outcome) {
			e.add(fmt.Sprintf("after %s err=%v resumed=%v", o.State.Status, o.Err != nil, o.Resumed))
		},
	}
}

// TestExtensionPoints: BeforeTurn adds to every model call's system prompt,
// AtBoundary runs inside each checkpoint's transaction, AfterRun once at the
// end; a resumed run's first boundary is First again, and a run resumed
// with decisions writes it before anything runs, naming the interrupt they
// answered.
func TestExtensionPoints(t *testing.T) {
	t.Parallel()
	a, recA := ag("a", calls("lookup", `{}`, "transfer_to_b", `{}`))
	a.Tools = []*agent.Tool{{Name: "lookup", Func: func(context.Context, json.RawMessage) (string, error) { return "ok", nil },
		RequireApproval: func(context.Context, json.RawMessage) bool { return true }}}
	a.Transfers = []*transfer.Transfer{{To: "b"}}
	b, recB := ag("b", text("b here"))
	tr := &traceExt{}
	ck := &txCheckpoints{}
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a, b), Checkpointer: ck, Extensions: []runner.Extension{tr.ext()}})
	res, err := r.Run(t.Context(), "go", runner.WithRunID("r1"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != runstate.StatusInterrupted {
		t.Fatalf("status %s, want interrupted", res.Status)
	}
	if _, err := r.Resume(t.Context(), res.State, runner.WithDecisions(runner.Decision{Type: runner.DecisionApprove})); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"boundary 1 running first=true tx=tx-cp1 id=cp1",
		"before a",
		"boundary 2 interrupted first=false tx=tx-cp2 id=cp2",
		"after interrupted err=false resumed=false",
		"boundary 3 running first=true tx=tx-cp3 id=cp3 answered=r1-i2 decisions=1", // the decision, before the call runs
		"boundary 4 running first=false tx=tx-cp4 id=cp4",                           // the approved call's result
		"boundary 5 running first=false tx=tx-cp5 id=cp5",                           // the transfer
		"before b",
		"boundary 6 completed first=false tx=tx-cp6 id=cp6",
		"after completed err=false resumed=true",
	}
	if !slices.Equal(tr.points, want) {
		t.Fatalf("points:\n  %s\nwant:\n  %s", strings.Join(tr.points, "\n  "), strings.Join(want, "\n  "))
	}
	if sys := recA.last(t).System; !strings.HasSuffix(sys, "memory of a") || !strings.HasPrefix(sys, "You are a.") {
		t.Errorf("a's system prompt %q: want its instructions, then the extension's text", sys)
	}
	if sys := recB.last(t).System; !strings.HasSuffix(sys, "memory of b") {
		t.Errorf("b's system prompt %q does not end with the extension's text", sys)
	}
}

// TestBoundaryErrorRollsBack: an AtBoundary error aborts the write and fails
// the run; an error of BeforeTurn fails the run as a system error.
func TestBoundaryErrorRollsBack(t *testing.T) {
	t.Parallel()
	boom := errors.New("queue down")
	a, _ := ag("a", text("hi"))
	ck := &txCheckpoints{}
	ext := runner.ExtensionFuncs{Boundary: func(_ context.Context, b *runner.Boundary) error {
		if b.State.Status == runstate.StatusCompleted {
			return boom
		}
		return nil
	}}
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a), Checkpointer: ck, Extensions: []runner.Extension{ext}})
	_, err := r.Run(t.Context(), "go")
	if !errors.Is(err, boom) || runner.KindOf(err) != runner.KindSystem {
		t.Fatalf("err %v (%s), want the boundary's error as a system error", err, runner.KindOf(err))
	}
	if st := ck.Latest(t); st.Status != runstate.StatusFailed || ck.Len() != 2 {
		t.Fatalf("%d checkpoints, the last %s: want the input and the failure, not the refused completion", ck.Len(), st.Status)
	}

	before := runner.ExtensionFuncs{Before: func(context.Context, *runner.Turn) error { return boom }}
	r2, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a), Extensions: []runner.Extension{before}})
	if _, err := r2.Run(t.Context(), "go"); !errors.Is(err, boom) || runner.KindOf(err) != runner.KindSystem {
		t.Fatalf("err %v, want BeforeTurn's error as a system error", err)
	}
}

// TestStoredBeforeFirstEvent: a new run's input is checkpointed before its
// first event, and that checkpoint numbers the start events; a run whose
// first checkpoint fails emits nothing.
func TestStoredBeforeFirstEvent(t *testing.T) {
	t.Parallel()
	a, _ := ag("a", text("hi"))
	ck := &memCheckpoints{}
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a), Checkpointer: ck})
	n := 0
	for ev, err := range r.Stream(t.Context(), "hello") {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if n == 1 {
			first := ck.Latest(t)
			if first.Step != 1 || first.Status != runstate.StatusRunning || len(first.Transcript) != 1 || first.Transcript[0].Text() != "hello" {
				t.Fatalf("before the first event the store holds step %d %s %v, want the input at step 1", first.Step, first.Status, first.Transcript)
			}
			if first.Seq != 2 {
				t.Errorf("first checkpoint seq %d, want 2 (run_start and agent_start)", first.Seq)
			}
			if ev.EventType() != runner.TypeRunStart || ev.Sequence() != 1 {
				t.Errorf("first event %s #%d, want run_start #1", ev.EventType(), ev.Sequence())
			}
		}
	}

	refuse := runner.CheckpointFunc(func(context.Context, *runstate.State) error { return errors.New("database down") })
	r2, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a), Checkpointer: refuse})
	events, runErr := collect(r2.Stream(t.Context(), "hello"))
	if runErr == nil || len(events) != 0 {
		t.Fatalf("events %v, err %v: want no event and the checkpoint's error", events, runErr)
	}
}
