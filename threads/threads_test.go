package threads_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/policy"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
	"github.com/batonhq/baton/transfer"
)

const owner = "acme"

func steps(s ...scripted.Step) []scripted.Step { return s }

func call(name, args string) scripted.Step {
	return scripted.Step{ToolCalls: []scripted.Call{{Name: name, Arguments: json.RawMessage(args)}}}
}

// support builds triage → billing with a sticky picker; billing needs approval to refund.
func support(t *testing.T, refunds *atomic.Int32, exts ...runner.Extension) *runner.Runner {
	t.Helper()
	triage := &agent.Agent{Name: "triage", Model: scripted.New("triage", steps(call("transfer_to_billing", `{"reason":"charge"}`)), scripted.Options{}),
		Transfers: []*transfer.Transfer{{To: "billing"}}}
	billing := &agent.Agent{Name: "billing", Model: scripted.New("billing", steps(
		scripted.Step{Text: "I see the double charge."},
		call("refund", `{"amount":10}`),
		scripted.Step{Text: "Refunded."},
	), scripted.Options{}),
		Tools: []*agent.Tool{{Name: "refund", Func: func(context.Context, json.RawMessage) (string, error) {
			refunds.Add(1)
			return "ok", nil
		}, RequireApproval: func(context.Context, json.RawMessage) bool { return true }}}}
	net, err := agent.NewNetwork(agent.NetworkConfig{Name: "support", Agents: []*agent.Agent{triage, billing}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{Network: net, Picker: policy.Chain{Pickers: []policy.Picker{policy.Sticky{}}}, Logger: slog.New(slog.DiscardHandler),
		Extensions: exts})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func drain(t *testing.T, seq func(func(runner.Event, error) bool)) (*runner.RunEndEvent, error) {
	t.Helper()
	var end *runner.RunEndEvent
	for ev, err := range seq {
		if err != nil {
			return end, err
		}
		if e, ok := ev.(*runner.RunEndEvent); ok {
			end = e
		}
	}
	return end, nil
}

func threadOf(t *testing.T, seq func(func(runner.Event, error) bool)) (string, *runner.RunEndEvent, error) {
	t.Helper()
	var id string
	var end *runner.RunEndEvent
	for ev, err := range seq {
		if err != nil {
			return id, end, err
		}
		switch e := ev.(type) {
		case *runner.RunStartEvent:
			id = e.ThreadID
		case *runner.RunEndEvent:
			end = e
		}
	}
	return id, end, nil
}

func testThreads(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("NewThreadWithTheFirstCheckpoint", func(t *testing.T) {
		st := open(t)
		var refunds atomic.Int32
		svc := threads.New(st, support(t, &refunds), nil)
		ctx := t.Context()
		// A new owner too: created when the first checkpoint finds it missing.
		stranger := "stranger-" + t.Name()
		var first string
		for ev, err := range svc.Turn(ctx, stranger, "I was charged twice", threads.TurnOptions{Name: "double charge"}) {
			if err != nil {
				t.Fatal(err)
			}
			if e, ok := ev.(*runner.RunStartEvent); ok {
				first = e.ThreadID
				// The thread and the input exist before the first event.
				th, err := st.GetThread(ctx, &store.GetThreadParams{OwnerID: stranger, ID: e.ThreadID})
				if err != nil || th.Name != "double charge" || th.ActiveAgent != "triage" || th.Network != "support" {
					t.Fatalf("the new thread at run_start: %+v, %v", th, err)
				}
				msgs, err := st.ListMessages(ctx, &store.ListMessagesParams{OwnerID: stranger, ThreadID: e.ThreadID})
				if err != nil || len(msgs) != 1 || msgs[0].Text() != "I was charged twice" {
					t.Fatalf("the new thread's messages at run_start: %v, %v", msgs, err)
				}
			}
		}
		if first == "" {
			t.Fatal("no run_start")
		}
		// A run that never starts leaves no thread behind.
		page, err := st.ListThreads(ctx, &store.ListThreadsParams{OwnerID: stranger, Limit: 10})
		if err != nil || len(page.Threads) != 1 {
			t.Fatalf("threads of the new owner: %v, %v", page, err)
		}
		for _, err := range svc.Turn(ctx, stranger, "", threads.TurnOptions{}) {
			if err == nil {
				t.Fatal("a turn without input started")
			}
		}
		if page, err := st.ListThreads(ctx, &store.ListThreadsParams{OwnerID: stranger, Limit: 10}); err != nil || len(page.Threads) != 1 {
			t.Fatalf("a refused turn left a thread: %v, %v", page, err)
		}
	})
	t.Run("TurnsStickyInterruptResume", func(t *testing.T) {
		st := open(t)
		var refunds atomic.Int32
		svc := threads.New(st, support(t, &refunds), nil)
		ctx := t.Context()
		id, end, err := threadOf(t, svc.Turn(ctx, owner, "I was charged twice", threads.TurnOptions{}))
		if err != nil || end.Status != runstate.StatusCompleted || end.LastAgent != "billing" {
			t.Fatalf("turn 1: %+v, %v", end, err)
		}
		th, err := st.GetThread(ctx, &store.GetThreadParams{OwnerID: owner, ID: id})
		if err != nil || th.ActiveAgent != "billing" || th.Network != "support" {
			t.Fatalf("thread after turn 1: %+v, %v", th, err)
		}
		// Turn 2 goes straight to billing (sticky) and sees turn 1.
		end, err = drain(t, svc.Turn(ctx, owner, "please refund it", threads.TurnOptions{ThreadID: id}))
		if err != nil || end.Status != runstate.StatusInterrupted || end.Transfers != 0 || end.LastAgent != "billing" {
			t.Fatalf("turn 2: %+v, %v", end, err)
		}
		// The thread is busy until the decision.
		_, err = drain(t, svc.Turn(ctx, owner, "hello?", threads.TurnOptions{ThreadID: id}))
		var busy *threads.BusyError
		if !errors.As(err, &busy) || !errors.Is(err, store.ErrConflict) {
			t.Fatalf("turn during interrupt: %v", err)
		}
		// A new process resumes it from the store.
		var refunds2 atomic.Int32
		svc2 := threads.New(st, support(t, &refunds2), nil)
		end, err = drain(t, svc2.Resume(ctx, owner, busy.RunID, runner.WithDecisions(runner.Decision{Type: runner.DecisionApprove})))
		if err != nil || end.Status != runstate.StatusCompleted || end.Output != "Refunded." || refunds2.Load() != 1 || refunds.Load() != 0 {
			t.Fatalf("resume: %+v, %v (refunds %d/%d)", end, err, refunds.Load(), refunds2.Load())
		}
		msgs, err := st.ListMessages(ctx, &store.ListMessagesParams{OwnerID: owner, ThreadID: id})
		if err != nil {
			t.Fatal(err)
		}
		var shape []string
		hist := make([]message.Message, 0, len(msgs))
		for _, m := range msgs {
			shape = append(shape, string(m.Role)+":"+m.Agent)
			hist = append(hist, m.Message)
		}
		want := "user: assistant:triage tool:triage assistant:billing user: assistant:billing tool:billing assistant:billing"
		if got := strings.Join(shape, " "); got != want {
			t.Errorf("stored messages:\n got %s\nwant %s", got, want)
		}
		if err := message.Validate(hist); err != nil {
			t.Errorf("stored history: %v", err)
		}
		// Another owner sees nothing.
		if _, err := drain(t, svc.Turn(ctx, "intruder", "hi", threads.TurnOptions{ThreadID: id})); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("other owner: %v", err)
		}
	})
	t.Run("StaleWriterFenced", func(t *testing.T) {
		st := open(t)
		ctx := t.Context()
		var refunds atomic.Int32
		id, _, err := threadOf(t, threads.New(st, support(t, &refunds), nil).Turn(ctx, owner, "charged twice", threads.TurnOptions{}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := drain(t, threads.New(st, support(t, &refunds), nil).Turn(ctx, owner, "refund", threads.TurnOptions{ThreadID: id})); err != nil {
			t.Fatal(err)
		}
		cp, err := st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, ThreadID: id})
		if err != nil {
			t.Fatal(err)
		}
		// Two workers resume the same checkpoint with the same decision at
		// once: both load it, and the first to write the decision's
		// checkpoint wins; the other is fenced before the tool runs.
		entered := make(chan struct{}, 2)
		release := make(chan struct{})
		before := refunds.Load()
		worker := func() *threads.Service {
			r := support(t, &refunds)
			billing, _ := r.Network().Agent("billing")
			billing.Tools[0].Func = func(ctx context.Context, _ json.RawMessage) (string, error) {
				entered <- struct{}{}
				<-release
				refunds.Add(1)
				return "ok", nil
			}
			return threads.New(st, r, nil)
		}
		errs := make(chan error, 2)
		for range 2 {
			w := worker()
			mine, err := st.GetCheckpoint(ctx, &store.GetCheckpointParams{OwnerID: owner, ID: cp.ID})
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				_, err := drain(t, w.ResumeCheckpoint(ctx, owner, mine, runner.WithDecisions(runner.Decision{Type: runner.DecisionApprove})))
				errs <- err
			}()
		}
		<-entered
		lost := <-errs // the loser ends while the winner's tool still runs
		close(release)
		if err := <-errs; err != nil {
			t.Fatalf("winner: %v", err)
		}
		if n := len(entered); n != 0 || refunds.Load() != before+1 {
			t.Fatalf("the tool ran %d times, want once", refunds.Load()-before)
		}
		var stale *store.StaleWriteError
		if !errors.As(lost, &stale) || !errors.Is(lost, store.ErrConflict) {
			t.Fatalf("loser's error = %v, want a StaleWriteError", lost)
		}
		final, err := st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, ThreadID: id})
		if err != nil || final.State.Status != runstate.StatusCompleted {
			t.Fatalf("final checkpoint = %+v, %v", final, err)
		}
		msgs, _ := st.ListMessages(ctx, &store.ListMessagesParams{OwnerID: owner, ThreadID: id})
		hist := make([]message.Message, 0, len(msgs))
		for _, m := range msgs {
			hist = append(hist, m.Message)
		}
		if err := message.Validate(hist); err != nil || len(hist) != 8 {
			t.Errorf("stored history after the race: %d messages, %v", len(hist), err)
		}
	})
}

func TestSQLite(t *testing.T) {
	testThreads(t, func(t *testing.T) store.Store { return testdb.SQLite(t) })
}

func TestPostgres(t *testing.T) {
	url := testdb.URL(t)
	testThreads(t, func(t *testing.T) store.Store { return testdb.PostgresWith(t, url, store.Options{}) })
}
