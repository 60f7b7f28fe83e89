package threads_test

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// TestForkShares: a fork reads its source's stored rows (the same ids)
// instead of copying them. At the approval of a thread's second run, the
// fork shares the first run's rows and its own run waits for its own
// decision, which completes it; a fork of that fork at a shared message,
// edited, runs a turn to an approval whose checkpoint refers to the rows
// read through both sources by position, and a new service (a process
// after a crash) resumes it from the store to the end. SQLite and
// PostgreSQL.
func TestForkShares(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) { testForkShares(t, testdb.SQLite(t)) })
	t.Run("Postgres", func(t *testing.T) {
		testForkShares(t, testdb.PostgresWith(t, testdb.URL(t), store.Options{}))
	})
}

func testForkShares(t *testing.T, st store.Store) {
	ctx := t.Context()
	svc := func() *threads.Service {
		var refunds atomic.Int32
		return threads.New(st, support(t, &refunds), nil)
	}
	list := func(thread string) []*store.Message {
		t.Helper()
		msgs, err := st.ListMessages(ctx, &store.ListMessagesParams{OwnerID: owner, ThreadID: thread})
		if err != nil {
			t.Fatal(err)
		}
		return msgs
	}
	shape := func(msgs []*store.Message) string {
		var s []string
		for _, m := range msgs {
			s = append(s, string(m.Role)+":"+m.Agent)
		}
		return strings.Join(s, " ")
	}
	id, end, err := threadOf(t, svc().Turn(ctx, owner, "I was charged twice", threads.TurnOptions{}))
	if err != nil || end.Status != runstate.StatusCompleted {
		t.Fatalf("turn 1: %+v, %v", end, err)
	}
	if end, err = drain(t, svc().Turn(ctx, owner, "please refund it", threads.TurnOptions{ThreadID: id})); err != nil || end.Status != runstate.StatusInterrupted {
		t.Fatalf("turn 2: %+v, %v", end, err)
	}
	approval, err := st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, ThreadID: id, NoState: true})
	if err != nil {
		t.Fatal(err)
	}
	src := list(id)

	// At the approval: the first run's rows shared, the second's copied
	// with the fork's own run.
	f, err := svc().Fork(ctx, owner, id, approval.ID, threads.ForkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := list(f.ID)
	if shape(got) != shape(src) || shape(got) != "user: assistant:triage tool:triage assistant:billing user: assistant:billing" {
		t.Fatalf("the fork at the approval: %s, want %s", shape(got), shape(src))
	}
	for i := range got {
		if shared := got[i].ID == src[i].ID; shared != (i < 4) || got[i].ThreadID != f.ID {
			t.Fatalf("message %d of the fork: %s of thread %s, the source's %s", i, got[i].ID, got[i].ThreadID, src[i].ID)
		}
	}
	var info threads.ForkInfo
	if err := json.Unmarshal(f.Metadata[threads.MetadataFork], &info); err != nil || info.RunID == "" || info.RunID == approval.RunID {
		t.Fatalf("the fork's info %+v, %v", info, err)
	}
	end, err = drain(t, svc().Resume(ctx, owner, info.RunID, runner.WithDecisions(runner.Decision{Type: runner.DecisionApprove})))
	if err != nil || end.Status != runstate.StatusCompleted || end.Output != "Refunded." {
		t.Fatalf("the fork's decision: %+v, %v", end, err)
	}
	if cp, err := st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: approval.RunID, NoState: true}); err != nil || cp.Status != runstate.StatusInterrupted {
		t.Fatalf("the source's run after the fork's decision: %+v, %v", cp, err)
	}

	// A fork of the fork at the first answer (the source's row), edited.
	ff, err := svc().Fork(ctx, owner, f.ID, src[3].ID, threads.ForkOptions{Edit: &threads.ForkEdit{Text: "I see two charges."}})
	if err != nil {
		t.Fatal(err)
	}
	got = list(ff.ID)
	if len(got) != 4 || got[0].ID != src[0].ID || got[2].ID != src[2].ID || got[3].ID == src[3].ID || got[3].Text() != "I see two charges." {
		t.Fatalf("the fork of the fork: %s", shape(got))
	}
	if end, err = drain(t, svc().Turn(ctx, owner, "please refund it", threads.TurnOptions{ThreadID: ff.ID})); err != nil || end.Status != runstate.StatusInterrupted {
		t.Fatalf("a turn on the fork of the fork: %+v, %v", end, err)
	}
	cp, err := st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, ThreadID: ff.ID})
	if err != nil {
		t.Fatal(err)
	}
	if cp.Rows == nil || len(cp.Rows.History) != 4 || cp.State.Messages[0].ID != src[0].ID || cp.State.Messages[3].Text() != "I see two charges." {
		t.Fatalf("the checkpoint on the fork of the fork does not refer to its four history rows: %+v", cp.Rows)
	}
	// A new process resumes it from the store.
	end, err = drain(t, svc().Resume(ctx, owner, cp.RunID, runner.WithDecisions(runner.Decision{Type: runner.DecisionApprove})))
	if err != nil || end.Status != runstate.StatusCompleted || end.Output != "Refunded." {
		t.Fatalf("resume on the fork of the fork: %+v, %v", end, err)
	}
	got = list(ff.ID)
	if s := shape(got); s != "user: assistant:triage tool:triage assistant:billing user: assistant:billing tool:billing assistant:billing" || got[3].Text() != "I see two charges." {
		t.Fatalf("the fork of the fork at the end: %s", s)
	}
	if after := list(id); shape(after) != shape(src) {
		t.Fatalf("the source changed: %s", shape(after))
	}
}
