package threads_test

import (
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// TestInterruptExtension: a run's interrupt is stored, pending, with the
// checkpoint that stops the run; the resume that answers it marks it
// decided with its decisions, in its first checkpoint's transaction; of two
// concurrent resumes one decides it.
func TestInterruptExtension(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, open func(testing.TB) store.Store) {
		ctx := t.Context()
		st := open(t)
		var refunds atomic.Int32
		svc := threads.New(st, support(t, &refunds, threads.InterruptExtension()), nil)
		id, _, err := threadOf(t, svc.Turn(ctx, owner, "I was charged twice", threads.TurnOptions{}))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := st.ListInterrupts(ctx, &store.ListInterruptsParams{OwnerID: owner, ThreadID: id}); err != nil || len(got) != 0 {
			t.Fatalf("interrupts after a turn without approvals: %v, %v", got, err)
		}
		end, err := drain(t, svc.Turn(ctx, owner, "refund it", threads.TurnOptions{ThreadID: id}))
		if err != nil || end.Status != runstate.StatusInterrupted {
			t.Fatalf("second turn: %+v, %v", end, err)
		}
		cp, err := st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, ThreadID: id})
		if err != nil {
			t.Fatal(err)
		}
		run := cp.RunID
		want := cp.State.Interrupt
		in, err := st.GetInterrupt(ctx, &store.GetInterruptParams{OwnerID: owner, ID: want.ID})
		if err != nil {
			t.Fatal(err)
		}
		var payload runstate.Interrupt
		if err := json.Unmarshal(in.Payload, &payload); err != nil {
			t.Fatal(err)
		}
		if in.Kind != store.InterruptRun || in.Status != store.InterruptPending || in.RunID != run || in.ThreadID != id ||
			in.Network != "support" || in.Agent != "billing" || payload.ID != want.ID || len(payload.ActionRequests) != 1 ||
			payload.ActionRequests[0].Name != "refund" {
			t.Fatalf("stored interrupt %+v, payload %+v", in, payload)
		}

		// Two resumes at once: the fence and the interrupt's status let
		// one through.
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			mine, err := st.GetCheckpoint(ctx, &store.GetCheckpointParams{OwnerID: owner, ID: cp.ID})
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				_, errs[i] = drain(t, svc.ResumeCheckpoint(ctx, owner, mine, runner.WithDecisions(runner.Decision{Type: runner.DecisionApprove})))
			})
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, store.ErrConflict):
				t.Fatalf("resume: %v", err)
			}
		}
		if ok != 1 || refunds.Load() != 1 {
			t.Fatalf("%d resumes succeeded, %d refunds; want 1 and 1 (%v)", ok, refunds.Load(), errs)
		}
		in, err = st.GetInterrupt(ctx, &store.GetInterruptParams{OwnerID: owner, ID: want.ID})
		if err != nil {
			t.Fatal(err)
		}
		var d threads.RunInterruptDecision
		var o threads.RunInterruptOutcome
		if err := json.Unmarshal(in.Decision, &d); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(in.Outcome, &o); err != nil {
			t.Fatal(err)
		}
		if in.Status != store.InterruptDecided || len(d.Decisions) != 1 || d.Decisions[0].Type != runner.DecisionApprove ||
			o.RunID != run || o.CheckpointID == "" || in.DecidedAt.IsZero() {
			t.Fatalf("decided interrupt %+v (decision %+v, outcome %+v)", in, d, o)
		}
		if _, err := st.GetCheckpoint(ctx, &store.GetCheckpointParams{OwnerID: owner, ID: o.CheckpointID}); err != nil {
			t.Fatalf("the outcome's checkpoint: %v", err)
		}
	})
}
