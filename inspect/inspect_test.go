package inspect_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/inspect"
	"github.com/batonhq/baton/internal/runtest"
	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/service"
	"github.com/batonhq/baton/service/servicetest"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
	"github.com/batonhq/baton/store/sqlitestore"
	"github.com/batonhq/baton/threads"
)

func support() string { return filepath.Join("..", "examples", "support", "network.yaml") }

// open assembles the support network on st, started, stopped and closed
// with the test.
func open(t *testing.T, st store.Store, cfg service.Config) *service.Network {
	t.Helper()
	cfg.Store, cfg.Files = st, []string{support()}
	svc := servicetest.Started(t, cfg)
	n, _ := svc.Network("support")
	return n
}

// ended is a run's end and its id.
type ended struct {
	*runner.RunEndEvent
	RunID string
}

// turn runs one turn and returns its run_end.
func turn(t *testing.T, events func(func(runner.Event, error) bool)) ended {
	t.Helper()
	r := runtest.Collect(t, events, nil)
	if r.End == nil {
		t.Fatal("no run_end")
	}
	return ended{RunEndEvent: r.End, RunID: r.RunID()}
}

// eachRefund runs test on each backend, in parallel, on a fresh store
// whose support network has run ann's "I want a refund for order 1234"
// (to its end: the refund's approval) and on that run's end.
func eachRefund(t *testing.T, test func(t *testing.T, st store.Store, n *service.Network, end ended)) {
	t.Helper()
	t.Parallel()
	testdb.Each(t, func(t *testing.T, openStore func(testing.TB) store.Store) {
		st := openStore(t)
		n := open(t, st, service.Config{})
		test(t, st, n, turn(t, n.Threads.Turn(t.Context(), "ann", "I want a refund for order 1234", threads.TurnOptions{})))
	})
}

// steps returns ann's steps of the run runID, failing t on an error.
func steps(t *testing.T, st store.Store, runID string) *inspect.Run {
	t.Helper()
	r, err := inspect.Steps(t.Context(), st, "ann", "", runID)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// stepDetail returns ann's step stepID of run runID on r's thread, in
// full, and its detail decoded, failing t on an error.
func stepDetail(t *testing.T, st store.Store, r *inspect.Run, runID, stepID string) (*inspect.Step, inspect.Detail) {
	t.Helper()
	full, err := inspect.GetStep(t.Context(), st, "ann", r.ThreadID, runID, stepID)
	if err != nil {
		t.Fatal(err)
	}
	var d inspect.Detail
	if err := json.Unmarshal(full.Detail, &d); err != nil {
		t.Fatal(err)
	}
	return full, d
}

func types(r *inspect.Run) string {
	var out []string
	for _, s := range r.Steps {
		out = append(out, s.Type+":"+s.Agent+":"+s.Name)
	}
	return strings.Join(out, " ")
}

// TestSteps: a run's model calls are recorded with the run (the request as
// sent with the tools offered, the answer, usage, timing) in the
// checkpoints' transactions, and with its tool calls, its transfer and
// its wait for an approval they are its steps in order; the wait ends
// when the decision resumes it. Another owner sees none of it, and the
// records go with their thread.
func TestSteps(t *testing.T) {
	eachRefund(t, func(t *testing.T, st store.Store, n *service.Network, end ended) {
		ctx := t.Context()
		if end.Status != runstate.StatusInterrupted {
			t.Fatalf("run ended %s, want interrupted for the refund's approval", end.Status)
		}
		r := steps(t, st, end.RunID)
		want := "model_call:triage: transfer:triage:refunds model_call:refunds: tool_call:refunds:lookup_order model_call:refunds: approval:refunds:issue_refund"
		if got := types(r); got != want {
			t.Fatalf("steps\n  %s\nwant\n  %s", got, want)
		}
		if r.Status != "interrupted" || r.Agent != "refunds" || r.ThreadID == "" || r.Tokens.Input == 0 {
			t.Errorf("run %+v", r)
		}
		last := r.Steps[len(r.Steps)-1]
		if !last.Ongoing || last.CheckpointID != r.CheckpointID {
			t.Errorf("approval step %+v: want ongoing, at the run's checkpoint", last)
		}
		m := r.Steps[2]
		if m.Model != "scripted" || m.Tokens == nil || m.CheckpointID == "" || m.DurationMS <= 0 || m.FirstTokenMS == nil || m.Detail != nil {
			t.Errorf("listed model call %+v", m)
		}
		full, d := stepDetail(t, st, r, end.RunID, m.ID)
		var tools []string
		for _, tl := range d.Request.Tools {
			tools = append(tools, tl.Name)
		}
		if d.Request == nil || !strings.Contains(d.Request.System, "You issue refunds.") || strings.Join(tools, ",") != "lookup_order,issue_refund" ||
			len(d.Request.Messages) == 0 || d.Answer == nil || len(d.Answer.Message.Parts) == 0 {
			t.Fatalf("model call detail %s", full.Detail)
		}
		tool, err := inspect.GetStep(ctx, st, "ann", r.ThreadID, end.RunID, r.Steps[3].ID)
		if err != nil || !strings.Contains(string(tool.Detail), `"arguments":{"order_id":"1234"}`) || !strings.Contains(string(tool.Detail), "delivered") {
			t.Fatalf("tool step %s, %v", tool.Detail, err)
		}
		wait, err := inspect.GetStep(ctx, st, "ann", r.ThreadID, end.RunID, last.ID)
		if err != nil || !strings.Contains(string(wait.Detail), "issue_refund") {
			t.Fatalf("approval step %s, %v", wait.Detail, err)
		}

		// Another owner, another thread: not found.
		if _, err := inspect.Steps(ctx, st, "bob", "", end.RunID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("another owner's steps: %v", err)
		}
		if _, err := inspect.GetStep(ctx, st, "bob", "", end.RunID, m.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("another owner's step: %v", err)
		}
		if _, err := inspect.Steps(ctx, st, "ann", "other-thread", end.RunID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("steps under another thread: %v", err)
		}

		// The decision: the wait ends, the run goes on.
		end2 := turn(t, n.Threads.Resume(ctx, "ann", end.RunID, runner.WithDecisions(runner.Decision{Type: runner.DecisionApprove})))
		if end2.Status != runstate.StatusCompleted {
			t.Fatalf("resumed run %s", end2.Status)
		}
		r = steps(t, st, end.RunID)
		want += " tool_call:refunds:issue_refund model_call:refunds:"
		if got := types(r); got != want {
			t.Fatalf("steps after the decision\n  %s\nwant\n  %s", got, want)
		}
		if a := r.Steps[5]; a.Ongoing || a.DurationMS <= 0 || a.CheckpointStep <= last.CheckpointStep {
			t.Errorf("decided approval step %+v", a)
		}

		// Deleting the thread deletes its records.
		deleteThread(t, st, "ann", r.ThreadID)
		recs, err := st.ListCallRecords(ctx, &store.ListCallRecordsParams{OwnerID: "ann", RunID: end.RunID})
		if err != nil || len(recs) != 0 {
			t.Fatalf("records after the thread's deletion: %d, %v", len(recs), err)
		}
	})
}

// deleteThread deletes a thread behind the store's back (the store has no
// call for it).
func deleteThread(t *testing.T, st store.Store, owner, id string) {
	t.Helper()
	var err error
	switch s := st.(type) {
	case *sqlitestore.Store:
		_, err = s.DB().ExecContext(t.Context(), `DELETE FROM threads WHERE owner_id = $1 AND id = $2`, owner, id)
	case *pgstore.Store:
		_, err = s.Pool().Exec(t.Context(), `DELETE FROM threads WHERE owner_id = $1 AND id = $2`, owner, id)
	default:
		t.Fatalf("store %T", st)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestRetention: the service's sweeper deletes records past the
// retention; a negative retention (--inspect-retention 0) records
// nothing.
func TestRetention(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, openStore func(testing.TB) store.Store) {
		ctx := t.Context()
		st := openStore(t)
		none := open(t, st, service.Config{InspectRetention: -1})
		end := turn(t, none.Threads.Turn(ctx, "ann", "I was charged twice", threads.TurnOptions{}))
		if recs, err := st.ListCallRecords(ctx, &store.ListCallRecordsParams{OwnerID: "ann", RunID: end.RunID}); err != nil || len(recs) != 0 {
			t.Fatalf("records kept with retention 0: %d, %v", len(recs), err)
		}
		n := open(t, st, service.Config{InspectRetention: 2 * time.Second})
		end = turn(t, n.Threads.Turn(ctx, "ann", "I was charged twice", threads.TurnOptions{}))
		recs, err := st.ListCallRecords(ctx, &store.ListCallRecordsParams{OwnerID: "ann", RunID: end.RunID})
		if err != nil || len(recs) == 0 {
			t.Fatalf("records of a run: %d, %v", len(recs), err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			recs, err := st.ListCallRecords(ctx, &store.ListCallRecordsParams{OwnerID: "ann", RunID: end.RunID})
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d records left 30 s after a retention of 2 s", len(recs))
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// TestStepsBackground: a run handed to a background worker lists the
// hand-over as a step, from the suspension to the worker's end of the run,
// and the calls the worker made (the slow tool, the analyst's answer)
// recorded with the worker's checkpoints.
func TestStepsBackground(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, openStore func(testing.TB) store.Store) {
		ctx := t.Context()
		st := openStore(t)
		svc := servicetest.Started(t, service.Config{Store: st, Files: []string{filepath.Join("..", "examples", "research", "network.yaml")}, Workers: 1})
		n, _ := svc.Network("research")
		end := turn(t, n.Threads.Turn(ctx, "ann", "How did EV sales develop in 2025?", threads.TurnOptions{RunOptions: n.Continuation.RunOptions()}))
		if end.Status != runstate.StatusSuspended {
			t.Fatalf("run ended %s, want suspended for the worker", end.Status)
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			cp, err := st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: "ann", RunID: end.RunID})
			if err != nil {
				t.Fatal(err)
			}
			if cp.Status == runstate.StatusCompleted {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the worker did not complete the run: %s", cp.Status)
			}
			time.Sleep(50 * time.Millisecond)
		}
		r := steps(t, st, end.RunID)
		var bg *inspect.Step
		var after []string
		for _, s := range r.Steps {
			if s.Type == inspect.StepBackground {
				bg = s
			} else if bg != nil {
				after = append(after, s.Type+":"+s.Name)
			}
		}
		if bg == nil || bg.Ongoing || bg.DurationMS <= 0 || bg.CheckpointID != r.CheckpointID {
			t.Fatalf("background step %+v in %s", bg, types(r))
		}
		if strings.Join(after, " ") != "tool_call:compile_report model_call:" {
			t.Fatalf("steps after the hand-over %q (all: %s)", after, types(r))
		}
	})
}

// TestStepsAfterPrune: a run whose older checkpoints the checkpoints'
// retention pruned still lists its steps: every recorded call, and the
// waits of the checkpoints left.
func TestStepsAfterPrune(t *testing.T) {
	eachRefund(t, func(t *testing.T, st store.Store, _ *service.Network, end ended) {
		ctx := t.Context()
		deleted := 0
		for p := (&store.PruneCheckpointsParams{Before: time.Now().Add(time.Minute)}); ; {
			res, err := st.PruneCheckpoints(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			deleted += res.Deleted
			if p.After = res.Next; p.After == "" {
				break
			}
		}
		if deleted == 0 {
			t.Fatal("the prune deleted no checkpoint; the test proves nothing")
		}
		r := steps(t, st, end.RunID)
		want := "model_call:triage: transfer:triage:refunds model_call:refunds: tool_call:refunds:lookup_order model_call:refunds: approval:refunds:issue_refund"
		if got := types(r); got != want {
			t.Fatalf("steps after the prune\n  %s\nwant\n  %s", got, want)
		}
	})
}

// TestCallCap: a model call whose detail is over the cap
// (InspectMaxCallBytes) is recorded within it. A request of one long
// message has its text cut; on the next turn the request's oldest
// messages are left out (dropped_messages counts them) and the newest
// kept whole.
func TestCallCap(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, openStore func(testing.TB) store.Store) {
		ctx := t.Context()
		st := openStore(t)
		const capBytes = 2048
		n := open(t, st, service.Config{InspectMaxCallBytes: capBytes})
		long := "Hello there. " + strings.Repeat("ÿ", 3000) // no rule's words: triage replies
		modelCall := func(runID string) (string, inspect.Detail) {
			t.Helper()
			r := steps(t, st, runID)
			if len(r.Steps) != 1 || r.Steps[0].Type != inspect.StepModelCall || !r.Steps[0].Truncated {
				t.Fatalf("steps %s, the model call %+v: want one, truncated", types(r), r.Steps[0])
			}
			full, err := inspect.GetStep(ctx, st, "ann", r.ThreadID, runID, r.Steps[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(full.Detail) > capBytes {
				t.Fatalf("detail of %d bytes over the cap of %d", len(full.Detail), capBytes)
			}
			var d inspect.Detail
			if err := json.Unmarshal(full.Detail, &d); err != nil || d.Request == nil || d.Answer == nil {
				t.Fatalf("detail %s, %v", full.Detail, err)
			}
			return r.ThreadID, d
		}

		end := turn(t, n.Threads.Turn(ctx, "ann", long, threads.TurnOptions{}))
		if end.Status != runstate.StatusCompleted {
			t.Fatalf("first turn %s", end.Status)
		}
		threadID, d := modelCall(end.RunID)
		if len(d.Request.Messages) != 1 || d.DroppedMessages != 0 {
			t.Fatalf("first request: %d messages, %d dropped; want the one message, cut", len(d.Request.Messages), d.DroppedMessages)
		}
		text := d.Request.Messages[0].Text()
		if !strings.HasPrefix(text, "Hello there. ÿÿ") || !strings.HasSuffix(text, "…[cut]") || len(text) >= len(long) {
			t.Fatalf("first request's message %q: want the start of it, cut", text)
		}
		if !strings.Contains(d.Answer.Message.Text(), "I can help with billing") {
			t.Fatalf("first answer %q", d.Answer.Message.Text())
		}

		end = turn(t, n.Threads.Turn(ctx, "ann", "Hello again", threads.TurnOptions{ThreadID: threadID}))
		if end.Status != runstate.StatusCompleted {
			t.Fatalf("second turn %s", end.Status)
		}
		_, d = modelCall(end.RunID)
		msgs := d.Request.Messages
		if d.DroppedMessages < 1 || len(msgs) == 0 || msgs[len(msgs)-1].Text() != "Hello again" {
			t.Fatalf("second request: %d messages kept, %d dropped, last %q; want the long one dropped, the newest whole",
				len(msgs), d.DroppedMessages, msgs[len(msgs)-1].Text())
		}
		for _, m := range msgs {
			if strings.Contains(m.Text(), "ÿ") {
				t.Fatalf("second request kept the long message: %q", m.Text())
			}
		}
	})
}

// relay is a network whose agent a fails once with a transient 503
// before it transfers to b, with a transform that redacts four digits
// in the history b is sent; agent c always fails.
const relay = `version: 1
name: relay
entry: a
agents:
  - name: a
    instructions: Pass it on.
    model: scripted
    script:
      - when: "(?i)broken"
        fail: {status: 400, message: bad request}
      - fail: {status: 503, message: busy, transient: true, retry_after: 10ms, times: 1}
        tool_calls:
          - name: transfer_to_b
            arguments: {}
    transfers:
      - to: b
        history: full
        transforms:
          - redact: {patterns: ["\\d{4}"], replacement: "[card]"}
  - name: b
    instructions: Answer.
    model: scripted
    script:
      - text: b here
`

// TestStepsRetriesRedacted: a model call retried after a transient 503 is
// stored with its retry (retries, and the failed attempt's error in
// detail.attempts); the request recorded for the agent a transfer handed
// to holds the values the transfer's transform redacted as redacted; a
// model call that fails for good is stored with its error and no answer.
func TestStepsRetriesRedacted(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "relay.yaml")
	if err := os.WriteFile(file, []byte(relay), 0o600); err != nil {
		t.Fatal(err)
	}
	testdb.Each(t, func(t *testing.T, openStore func(testing.TB) store.Store) {
		ctx := t.Context()
		st := openStore(t)
		svc := servicetest.Started(t, service.Config{Store: st, Files: []string{file}})
		n, _ := svc.Network("relay")
		end := turn(t, n.Threads.Turn(ctx, "ann", "my card is 4242 4242 4242 4242", threads.TurnOptions{}))
		if end.Status != runstate.StatusCompleted {
			t.Fatalf("run %s", end.Status)
		}
		r := steps(t, st, end.RunID)
		if got, want := types(r), "model_call:a: transfer:a:b model_call:b:"; got != want {
			t.Fatalf("steps %s, want %s", got, want)
		}
		detail := func(s *inspect.Step) (*inspect.Step, inspect.Detail) {
			t.Helper()
			return stepDetail(t, st, r, end.RunID, s.ID)
		}

		a, d := detail(r.Steps[0])
		if a.Retries != 1 || len(d.Attempts) != 1 || d.Attempts[0].Attempt != 1 ||
			!strings.Contains(d.Attempts[0].Error, "503") || d.Attempts[0].DurationMS < 0 || d.Attempts[0].StartedAt.IsZero() {
			t.Fatalf("a's call: retries %d, attempts %+v; want one failed attempt with the 503", a.Retries, d.Attempts)
		}
		if a.Error != "" || d.Answer == nil || len(d.Answer.Message.ToolCalls()) != 1 {
			t.Fatalf("a's call after its retry: error %q, answer %+v", a.Error, d.Answer)
		}

		_, d = detail(r.Steps[2])
		if d.Request == nil {
			t.Fatal("b's call has no request")
		}
		var sent strings.Builder
		for _, m := range d.Request.Messages {
			sent.WriteString(m.Text())
		}
		if strings.Contains(sent.String(), "4242") || !strings.Contains(sent.String(), "my card is [card] [card] [card] [card]") {
			t.Fatalf("b's request as recorded %q: want the card number redacted", sent.String())
		}
		if raw, _ := json.Marshal(d.Request); strings.Contains(string(raw), "4242") {
			t.Fatalf("b's recorded request holds the redacted value: %s", raw)
		}

		// A call that fails for good: stored with its error.
		var runID string
		var runErr error
		for ev, err := range n.Threads.Turn(ctx, "ann", "it is broken", threads.TurnOptions{}) {
			if e, ok := ev.(*runner.RunStartEvent); ok {
				runID = e.RunID
			}
			if err != nil {
				runErr = err
			}
		}
		if runID == "" || runErr == nil || !strings.Contains(runErr.Error(), "400") {
			t.Fatalf("run %q ended with %v, want the 400", runID, runErr)
		}
		end.RunID = runID
		r = steps(t, st, end.RunID)
		if len(r.Steps) != 1 || r.Steps[0].Type != inspect.StepModelCall || !strings.Contains(r.Steps[0].Error, "400") {
			t.Fatalf("steps of the failed run %s: %+v", types(r), r.Steps)
		}
		if _, d := detail(r.Steps[0]); d.Answer != nil || d.Request == nil {
			t.Fatalf("failed call: answer %+v, request %+v", d.Answer, d.Request)
		}
	})
}
