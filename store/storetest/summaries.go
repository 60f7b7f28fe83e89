package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
)

func testThreadSummaries(t *testing.T, s store.Store, b *bundle) {
	hid := "handoff-" + uuid.NewString()
	p := &store.UpsertThreadSummaryParams{OwnerID: b.owner, HandoffID: hid, AgentID: "assistant", ThreadID: "t1",
		Summary: json.RawMessage(`{"title":"Trip","body":["a","b","c"],"tldr":"go"}`), Markdown: "# Trip\n- a"}
	s1 := Must(s.UpsertThreadSummary(b.ctx, p))(t)
	if s1.HandoffID != hid || s1.AgentID != "assistant" || s1.ThreadID != "t1" || s1.ChildThreadID != "" ||
		!jsonEqual(s1.Summary, p.Summary) || s1.Markdown != p.Markdown || s1.OwnerID != b.owner {
		t.Fatalf("UpsertThreadSummary = %+v", s1)
	}
	checkTime(t, "CreatedAt", s1.CreatedAt)
	p.ChildThreadID, p.Markdown, p.Summary = "t2", "# Trip (edited)", json.RawMessage(`{"title":"Trip 2","body":[],"tldr":"x"}`)
	s2 := Must(s.UpsertThreadSummary(b.ctx, p))(t)
	if s2.ID != s1.ID || !s2.CreatedAt.Equal(s1.CreatedAt) || s2.ChildThreadID != "t2" || s2.Markdown != p.Markdown || !jsonEqual(s2.Summary, p.Summary) {
		t.Fatalf("second upsert = %+v (first %+v)", s2, s1)
	}
	got := Must(s.GetThreadSummary(b.ctx, &store.GetThreadSummaryParams{OwnerID: b.owner, HandoffID: hid}))(t)
	if got.ID != s2.ID || !jsonEqual(got.Summary, s2.Summary) || got.Markdown != s2.Markdown || !got.UpdatedAt.Equal(s2.UpdatedAt) {
		t.Fatalf("GetThreadSummary = %+v", got)
	}
	_, err := s.GetThreadSummary(b.ctx, &store.GetThreadSummaryParams{OwnerID: b.other, HandoffID: hid})
	wantErr(t, err, store.ErrNotFound)
	// The same handoff ID for another owner is another summary.
	theirs := Must(s.UpsertThreadSummary(b.ctx, &store.UpsertThreadSummaryParams{OwnerID: b.other, HandoffID: hid, Summary: json.RawMessage(`{}`)}))(t)
	if theirs.ID == s1.ID {
		t.Fatal("another owner's upsert replaced the summary")
	}
	if got := Must(s.GetThreadSummary(b.ctx, &store.GetThreadSummaryParams{OwnerID: b.owner, HandoffID: hid}))(t); got.Markdown != p.Markdown {
		t.Fatalf("summary changed by another owner: %+v", got)
	}
	_, err = s.UpsertThreadSummary(b.ctx, &store.UpsertThreadSummaryParams{OwnerID: b.owner, HandoffID: "h", Summary: json.RawMessage(`{`)})
	wantErr(t, err, store.ErrInvalid)
}

func testMemoryDocumentCAS(t *testing.T, s store.Store, b *bundle) {
	get := &store.GetMemoryDocumentParams{OwnerID: b.owner, AgentID: "assistant"}
	_, err := s.GetMemoryDocument(b.ctx, get)
	wantErr(t, err, store.ErrNotFound)
	// Updating a document that does not exist is a conflict with version 0.
	_, err = s.PutMemoryDocument(b.ctx, &store.PutMemoryDocumentParams{OwnerID: b.owner, AgentID: "assistant", Content: "x", ExpectedVersion: 1})
	if vc := wantAs[*store.VersionConflictError](t, err); vc.Actual != 0 || vc.Expected != 1 {
		t.Fatalf("conflict = %+v", vc)
	}
	content := "# Memory\n<current_thread_summary>\nnone\n</current_thread_summary>\n"
	m1 := Must(s.PutMemoryDocument(b.ctx, &store.PutMemoryDocumentParams{OwnerID: b.owner, AgentID: "assistant", Content: content}))(t)
	if m1.Version != 1 || m1.Content != content {
		t.Fatalf("create = %+v", m1)
	}
	_, err = s.PutMemoryDocument(b.ctx, &store.PutMemoryDocumentParams{OwnerID: b.owner, AgentID: "assistant", Content: "again"})
	if vc := wantAs[*store.VersionConflictError](t, err); vc.Actual != 1 || vc.Expected != 0 {
		t.Fatalf("create twice = %+v", vc)
	}
	m2 := Must(s.PutMemoryDocument(b.ctx, &store.PutMemoryDocumentParams{OwnerID: b.owner, AgentID: "assistant", Content: "v2", ExpectedVersion: 1}))(t)
	if m2.Version != 2 || m2.Content != "v2" || !m2.CreatedAt.Equal(m1.CreatedAt) {
		t.Fatalf("update = %+v", m2)
	}
	_, err = s.PutMemoryDocument(b.ctx, &store.PutMemoryDocumentParams{OwnerID: b.owner, AgentID: "assistant", Content: "stale", ExpectedVersion: 1})
	vc := wantAs[*store.VersionConflictError](t, err)
	wantErr(t, err, store.ErrConflict)
	if vc.Actual != 2 || vc.Expected != 1 {
		t.Fatalf("stale = %+v", vc)
	}
	if got := Must(s.GetMemoryDocument(b.ctx, get))(t); *got != *m2 {
		t.Fatalf("GetMemoryDocument = %+v, want %+v", got, m2)
	}
	_, err = s.GetMemoryDocument(b.ctx, &store.GetMemoryDocumentParams{OwnerID: b.other, AgentID: "assistant"})
	wantErr(t, err, store.ErrNotFound)
	// Another owner's document of the same agent is separate.
	Must(s.PutMemoryDocument(b.ctx, &store.PutMemoryDocumentParams{OwnerID: b.other, AgentID: "assistant", Content: "theirs"}))(t)
	if got := Must(s.GetMemoryDocument(b.ctx, get))(t); got.Content != "v2" {
		t.Fatalf("content = %q", got.Content)
	}
}

func testMemoryDocumentConcurrentCAS(t *testing.T, s store.Store, b *bundle) {
	agent := "agent-" + uuid.NewString()
	const writers, rounds = 6, 4
	// Each round, every writer tries to replace the version it read; exactly
	// one may win.
	var version int64
	for round := range rounds {
		errs := race(writers, func(w int) error {
			return errOf(s.PutMemoryDocument(b.ctx, &store.PutMemoryDocumentParams{OwnerID: b.owner, AgentID: agent,
				Content: fmt.Sprintf("round %d writer %d", round, w), ExpectedVersion: version}))
		})
		winner := oneWinner(t, errs)
		for w, err := range errs {
			if w != winner {
				wantAs[*store.VersionConflictError](t, err)
			}
		}
		version++
		got := Must(s.GetMemoryDocument(b.ctx, &store.GetMemoryDocumentParams{OwnerID: b.owner, AgentID: agent}))(t)
		if got.Version != version {
			t.Fatalf("round %d: version %d, want %d", round, got.Version, version)
		}
	}
}

// writeContinuation is what a request does at a tool boundary: checkpoint,
// placeholder message and job run in one transaction.
func writeContinuation(t *testing.T, tx store.Tx, b *bundle, th *store.Thread, run, key string) (*store.Checkpoint, *store.Message, *store.JobRun) {
	t.Helper()
	st := newState(run, th.ID, 1)
	st.Status = runstate.StatusSuspended
	cp := Must(tx.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: st}))(t)
	msgs := Must(tx.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: message.Message{Role: message.RoleAssistant, Agent: "billing", Status: message.StatusQueued}}}}))(t)
	job := Must(tx.CreateJobRun(b.ctx, &store.CreateJobRunParams{OwnerID: b.owner, IdempotencyKey: key, Kind: "continuation", ThreadID: th.ID}))(t)
	// Reads in the transaction see its writes.
	if got := Must(tx.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner, RunID: run}))(t); got.ID != cp.ID {
		t.Fatalf("in-tx read = %s, want %s", got.ID, cp.ID)
	}
	return cp, msgs[0], job.Run
}

func testTxCommit(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	run, key := "run-"+uuid.NewString(), "key-"+uuid.NewString()
	var cp *store.Checkpoint
	var msg *store.Message
	var job *store.JobRun
	if err := s.Tx(b.ctx, func(tx store.Tx) error {
		cp, msg, job = writeContinuation(t, tx, b, th, run, key)
		return nil
	}); err != nil {
		t.Fatalf("Tx: %v", err)
	}
	if got := Must(s.GetCheckpoint(b.ctx, &store.GetCheckpointParams{OwnerID: b.owner, ID: cp.ID}))(t); got.Status != runstate.StatusSuspended {
		t.Fatalf("checkpoint = %+v", got)
	}
	Must(s.GetMessage(b.ctx, &store.GetMessageParams{OwnerID: b.owner, ID: msg.ID}))(t)
	Must(s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: b.owner, ID: job.ID}))(t)
	// Owners may change within one transaction.
	if err := s.Tx(b.ctx, func(tx store.Tx) error {
		if _, err := tx.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.other, ID: th.ID}); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("other owner read the thread: %v", err)
		}
		_, err := tx.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.owner, ID: th.ID})
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

func testTxRollback(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	run, key := "run-"+uuid.NewString(), "key-"+uuid.NewString()
	boom := errors.New("boom")
	var cp *store.Checkpoint
	var msg *store.Message
	var job *store.JobRun
	err := s.Tx(b.ctx, func(tx store.Tx) error {
		cp, msg, job = writeContinuation(t, tx, b, th, run, key)
		Must(tx.PutMemoryDocument(b.ctx, &store.PutMemoryDocumentParams{OwnerID: b.owner, AgentID: "a", Content: "x"}))(t)
		Must(tx.UpdateThreadMetadata(b.ctx, &store.UpdateThreadMetadataParams{OwnerID: b.owner, ThreadID: th.ID, Namespace: "n", Patch: json.RawMessage(`{"a":1}`)}))(t)
		return fmt.Errorf("after writing: %w", boom)
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Tx returned %v, want fn's error", err)
	}
	checkNothingWritten(t, s, b, th, run, key, cp, msg, job)
	// A failed write inside the transaction, returned by fn, rolls back the
	// successful ones before it.
	th2 := newThread(t, s, b)
	run2, key2 := "run-"+uuid.NewString(), "key-"+uuid.NewString()
	err = s.Tx(b.ctx, func(tx store.Tx) error {
		cp, msg, job = writeContinuation(t, tx, b, th2, run2, key2)
		_, err := tx.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run2, th2.ID, 1)})
		return err
	})
	wantAs[*store.StaleWriteError](t, err)
	checkNothingWritten(t, s, b, th2, run2, key2, cp, msg, job)
}

func checkNothingWritten(t *testing.T, s store.Store, b *bundle, th *store.Thread, run, key string, cp *store.Checkpoint, msg *store.Message, job *store.JobRun) {
	t.Helper()
	_, err := s.GetCheckpoint(b.ctx, &store.GetCheckpointParams{OwnerID: b.owner, ID: cp.ID})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner, RunID: run})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.GetMessage(b.ctx, &store.GetMessageParams{OwnerID: b.owner, ID: msg.ID})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: b.owner, ID: job.ID})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: b.owner, IdempotencyKey: key})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.GetMemoryDocument(b.ctx, &store.GetMemoryDocumentParams{OwnerID: b.owner, AgentID: "a"})
	wantErr(t, err, store.ErrNotFound)
	got := Must(s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.owner, ID: th.ID}))(t)
	if got.Version != th.Version || len(got.Metadata) != 0 {
		t.Fatalf("thread changed by a rolled-back transaction: %+v", got)
	}
	if msgs := Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: th.ID}))(t); len(msgs) != 0 {
		t.Fatalf("%d messages after rollback", len(msgs))
	}
	// The store is usable afterwards, and the sequence was not consumed.
	m := Must(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: message.User("after")}}}))(t)
	if m[0].Seq != 1 {
		t.Fatalf("seq after rollback = %d, want 1", m[0].Seq)
	}
	if err := s.Tx(b.ctx, func(tx store.Tx) error {
		_, err := tx.UpdateMessage(b.ctx, &store.UpdateMessageParams{OwnerID: b.owner, ID: m[0].ID, Status: message.StatusError})
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

func testTxPanic(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	func() {
		defer func() {
			if p := recover(); p != "kaboom" {
				t.Fatalf("recovered %v, want the panic to propagate", p)
			}
		}()
		_ = s.Tx(b.ctx, func(tx store.Tx) error {
			Must(tx.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
				Messages: []store.NewMessage{{Message: message.User("lost")}}}))(t)
			panic("kaboom")
		})
	}()
	if msgs := Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: th.ID}))(t); len(msgs) != 0 {
		t.Fatalf("%d messages after a panic in Tx", len(msgs))
	}
	// The write connection was released.
	Must(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: message.User("kept")}}}))(t)
}
