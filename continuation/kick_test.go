package continuation

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// TestQueuedRunStartsAfterALostKick: a run waits in a thread's queue behind
// a run a worker continues; when that run ends, the process that ended it
// does not start the queued run (its kick is lost, as when it dies right
// after the run's end). The durable kick committed with the run's end — a
// River job — starts it anyway, and it completes.
func TestQueuedRunStartsAfterALostKick(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := t.Context()
		tools := newToolLog()
		// Two turns of the script: the first run's, then the queued run's.
		net := network(t, tools, "", scripted.Options{},
			scripted.Step{Text: "Your order 1234 has shipped."},
			scripted.Step{Text: "Let me look that up too.", ToolCalls: []scripted.Call{{Name: "lookup", Arguments: json.RawMessage(`{"order":"5678"}`)}}},
			scripted.Step{Text: "Your order 5678 has shipped."})
		b := setup(t, be, net, tools, nil)
		thread, first, end := b.turn(t, "Where is my order 1234?")
		if end == nil || end.Status != runstate.StatusSuspended {
			t.Fatalf("first run ended %+v, want suspended (handed to a worker)", end)
		}
		var starts, lost atomic.Int32
		b.svc.Start = func(ctx context.Context, owner, threadID string, q threads.Queued) {
			starts.Add(1)
			if lost.CompareAndSwap(0, 1) {
				return // the kick of the process that ended the run before: lost
			}
			o := q.TurnOptions(threadID)
			o.RunOptions = b.cont.RunOptions()
			go func() {
				for range b.svc.Turn(context.WithoutCancel(ctx), owner, q.Input, o) {
				}
			}()
		}
		second := runstate.NewRunID()
		sub, err := b.svc.Submit(ctx, owner, "And where is order 5678?", threads.TurnOptions{ThreadID: thread, RunID: second, Strategy: threads.Enqueue})
		if err != nil {
			t.Fatal(err)
		}
		if !sub.Queued || sub.Position != 1 {
			t.Fatalf("submission %+v, want queued first", sub)
		}
		b.start(t) // a worker finishes the first run; its end's kick is lost
		deadline := time.Now().Add(45 * time.Second)
		for {
			cp, err := b.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: second})
			if err == nil && cp.State.Status == runstate.StatusCompleted {
				break
			}
			if err == nil && cp.State.Status == runstate.StatusFailed {
				t.Fatalf("the queued run failed: %+v", cp.State.Failure)
			}
			if time.Now().After(deadline) {
				t.Fatalf("the queued run %s is not completed 45s after the first run's end (latest checkpoint %+v, %v; %d starts)", second, cp, err, starts.Load())
			}
			time.Sleep(50 * time.Millisecond)
		}
		cp, err := b.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: first})
		if err != nil || cp.State.Status != runstate.StatusCompleted {
			t.Errorf("first run: %+v, %v", cp, err)
		}
		if n := starts.Load(); n < 2 {
			t.Errorf("%d starts of the queued run, want the lost one and the kick's", n)
		}
		th, err := b.st.GetThread(ctx, &store.GetThreadParams{OwnerID: owner, ID: thread})
		if err != nil {
			t.Fatal(err)
		}
		if q := threads.QueueOf(th); len(q) != 0 {
			t.Errorf("queue left: %+v", q)
		}
	})
}
