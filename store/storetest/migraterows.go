package storetest

import (
	"database/sql"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/store"
)

// MigrateKeepsRows writes rows of every kind a continuation writes
// (thread, messages, draft, job run, lease, checkpoint) at schema version
// from, then migrates to latest, back to from and to latest again, checking
// after each move that every row reads back as written. At latest it checks
// the constraints the migrations must keep: a message id is unique, a draft
// needs its message, a job run and a lease their owner's thread, an
// idempotency key and a checkpoint step are unique; and that the store
// still writes each kind of row. The caller checks what is backend-specific
// (the schema itself, the cascades from a deleted thread).
func MigrateKeepsRows(t *testing.T, s Migrator, from, latest int) {
	t.Helper()
	ctx := t.Context()
	if err := s.MigrateTo(ctx, from); err != nil {
		t.Fatalf("MigrateTo(%d): %v", from, err)
	}
	owner := "o-migrate-" + uuid.NewString()
	Must(s.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: owner}))(t)
	th := Must(s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: owner, Name: "migrated",
		Messages: []store.NewMessage{{Message: message.User("hello")}}}))(t)
	msgs := Must(s.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: message.Message{Role: message.RoleAssistant, Agent: "a", Status: message.StatusStreaming}}}}))(t)
	Must(s.UpsertDraft(ctx, &store.UpsertDraftParams{OwnerID: owner, MessageID: msgs[0].ID, Text: "partial"}))(t)
	jr := Must(s.CreateJobRun(ctx, &store.CreateJobRunParams{OwnerID: owner, IdempotencyKey: "k-1", Kind: "continue",
		ThreadID: th.ID, Metadata: map[string]json.RawMessage{"ns": json.RawMessage(`{"a":1}`)}}))(t)
	runID := "run-" + uuid.NewString()
	Must(s.AcquireLease(ctx, &store.AcquireLeaseParams{OwnerID: owner, RunID: runID, ThreadID: th.ID, Holder: "h", TTL: time.Hour}))(t)
	cp := Must(s.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: owner, State: newState(runID, th.ID, 0)}))(t)

	type rows struct {
		Messages []*store.Message
		Draft    *store.Draft
		Job      *store.JobRun
		Lease    *store.Lease
		Latest   string
	}
	read := func() rows {
		t.Helper()
		var r rows
		r.Messages = Must(s.ListMessages(ctx, &store.ListMessagesParams{OwnerID: owner, ThreadID: th.ID}))(t)
		r.Draft = Must(s.GetDraft(ctx, &store.GetDraftParams{OwnerID: owner, MessageID: msgs[0].ID}))(t)
		r.Job = Must(s.GetJobRun(ctx, &store.GetJobRunParams{OwnerID: owner, ID: jr.Run.ID}))(t)
		r.Lease = Must(s.GetLease(ctx, &store.GetLeaseParams{OwnerID: owner, RunID: runID}))(t)
		got := Must(s.GetCheckpoint(ctx, &store.GetCheckpointParams{OwnerID: owner, ID: cp.ID}))(t)
		latest := Must(s.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, ThreadID: th.ID}))(t)
		if got.ID != cp.ID || latest.ID != cp.ID || got.State.RunID != runID {
			t.Fatalf("checkpoint %s read back as %s, latest of the thread %s", cp.ID, got.ID, latest.ID)
		}
		r.Latest = latest.ID
		return r
	}
	want := read()
	if len(want.Messages) != 2 || want.Draft.Text != "partial" {
		t.Fatalf("rows written at version %d: %d messages, draft %q", from, len(want.Messages), want.Draft.Text)
	}
	for _, v := range []int{latest, from, latest} {
		if err := s.MigrateTo(ctx, v); err != nil {
			t.Fatalf("MigrateTo(%d): %v", v, err)
		}
		if got := read(); !reflect.DeepEqual(got, want) {
			t.Fatalf("after MigrateTo(%d) the rows read\n%+v\nwant\n%+v", v, got, want)
		}
	}

	// The constraints hold at latest.
	refused := func(what string, err, target error) {
		t.Helper()
		if !errors.Is(err, target) {
			t.Fatalf("%s: %v, want %v", what, err, target)
		}
	}
	_, err := s.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: message.Message{ID: msgs[0].ID, Role: message.RoleUser}}}})
	refused("a message with a taken id", err, store.ErrConflict)
	other := "o-migrate-" + uuid.NewString()
	Must(s.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: other}))(t)
	_, err = s.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: other, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: message.Message{Role: message.RoleUser}}}})
	refused("a message on another owner's thread", err, store.ErrNotFound)
	_, err = s.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: owner, ThreadID: uuid.NewString(),
		Messages: []store.NewMessage{{Message: message.Message{Role: message.RoleUser}}}})
	refused("a message on a missing thread", err, store.ErrNotFound)
	_, err = s.UpsertDraft(ctx, &store.UpsertDraftParams{OwnerID: other, MessageID: msgs[0].ID, Text: "x"})
	refused("a draft of another owner's message", err, store.ErrNotFound)
	_, err = s.UpsertDraft(ctx, &store.UpsertDraftParams{OwnerID: owner, MessageID: uuid.NewString(), Text: "x"})
	refused("a draft of a missing message", err, store.ErrNotFound)
	_, err = s.CreateJobRun(ctx, &store.CreateJobRunParams{OwnerID: other, IdempotencyKey: "k-1", Kind: "continue", ThreadID: th.ID})
	refused("a job run on another owner's thread", err, store.ErrNotFound)
	_, err = s.AcquireLease(ctx, &store.AcquireLeaseParams{OwnerID: other, RunID: runID, ThreadID: th.ID, Holder: "h", TTL: time.Hour})
	refused("a lease on another owner's thread", err, store.ErrNotFound)
	dup := Must(s.CreateJobRun(ctx, &store.CreateJobRunParams{OwnerID: owner, IdempotencyKey: "k-1", Kind: "continue", ThreadID: th.ID}))(t)
	if !dup.Duplicate || dup.Run.ID != jr.Run.ID {
		t.Fatalf("the same idempotency key again: %+v, want the duplicate %s", dup, jr.Run.ID)
	}
	_, err = s.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: owner, State: newState(runID, th.ID, 0)})
	var stale *store.StaleWriteError
	if !errors.As(err, &stale) {
		t.Fatalf("a second checkpoint of step 0: %v, want a *StaleWriteError", err)
	}
	_, err = s.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: owner, ID: cp.ID, State: newState("run-"+uuid.NewString(), th.ID, 0)})
	refused("a checkpoint with a taken id", err, store.ErrConflict)

	// And the store writes every kind of row.
	more := Must(s.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: message.User("again")}}}))(t)
	if more[0].Seq != 3 {
		t.Fatalf("message appended after the migrations has seq %d, want 3", more[0].Seq)
	}
	d := Must(s.UpsertDraft(ctx, &store.UpsertDraftParams{OwnerID: owner, MessageID: msgs[0].ID, Text: "more"}))(t)
	if d.Version != 2 {
		t.Fatalf("draft version %d after a second write, want 2", d.Version)
	}
	if err := s.DeleteDraft(ctx, &store.DeleteDraftParams{OwnerID: owner, MessageID: msgs[0].ID}); err != nil {
		t.Fatal(err)
	}
	Must(s.CreateJobRun(ctx, &store.CreateJobRunParams{OwnerID: owner, IdempotencyKey: "k-2", Kind: "continue", ThreadID: th.ID}))(t)
	Must(s.AcquireLease(ctx, &store.AcquireLeaseParams{OwnerID: owner, RunID: runID, ThreadID: th.ID, Holder: "h2", TTL: time.Hour}))(t)
	if ok := Must(s.ReleaseLease(ctx, &store.ReleaseLeaseParams{OwnerID: owner, RunID: runID, Holder: "h2"}))(t); !ok {
		t.Fatal("ReleaseLease after the migrations released nothing")
	}
	next := Must(s.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: owner, State: newState(runID, th.ID, 1), ParentID: cp.ID}))(t)
	if latest := Must(s.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, ThreadID: th.ID}))(t); latest.ID != next.ID {
		t.Fatalf("latest checkpoint of the thread %s, want %s", latest.ID, next.ID)
	}
}

// Cascades is what MigrateKeepsCascades needs to know of a backend.
type Cascades struct {
	// Now is the SQL of the current time in a time column ("now()", "0").
	Now string
	// Check, when set, runs after each MigrateTo (an integrity check).
	Check func()
	// Migrated, when set, runs once the schema is back at latest, before
	// the deletions.
	Migrated func()
}

// MigrateKeepsCascades continues from what MigrateKeepsRows leaves at
// latest (a thread, 3 messages, no draft, 2 job runs, no lease, 2
// checkpoints): it writes a draft and a lease again through db (the
// store's database, past its owner scoping), migrates to from and back to
// latest with them, checking the rows after each move, and then that
// deleting a message deletes its draft and deleting the thread the rest.
func MigrateKeepsCascades(t *testing.T, s Migrator, from, latest int, db *sql.DB, c Cascades) {
	t.Helper()
	ctx := t.Context()
	count := func() string {
		t.Helper()
		var n string
		if err := db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM threads) || ' ' || (SELECT count(*) FROM messages) || ' ' ||
			(SELECT count(*) FROM message_drafts) || ' ' || (SELECT count(*) FROM job_runs) || ' ' ||
			(SELECT count(*) FROM run_leases) || ' ' || (SELECT count(*) FROM checkpoints)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO message_drafts (message_id, owner_id, text, updated_at)
		SELECT id, owner_id, 'd', `+c.Now+` FROM messages LIMIT 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO run_leases (owner_id, run_id, thread_id, holder, expires_at)
		SELECT owner_id, 'r', id, 'h', `+c.Now+` FROM threads`); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != "1 3 1 2 1 2" {
		t.Fatalf("rows (threads, messages, drafts, job runs, leases, checkpoints): %s", got)
	}
	for _, v := range []int{from, latest} {
		if err := s.MigrateTo(ctx, v); err != nil {
			t.Fatal(err)
		}
		if c.Check != nil {
			c.Check()
		}
		if got := count(); got != "1 3 1 2 1 2" {
			t.Fatalf("rows after MigrateTo(%d): %s", v, got)
		}
	}
	if c.Migrated != nil {
		c.Migrated()
	}
	// Deleting a message deletes its draft; deleting the thread, the rest.
	if _, err := db.ExecContext(ctx, `DELETE FROM messages WHERE id = (SELECT message_id FROM message_drafts)`); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != "1 2 0 2 1 2" {
		t.Fatalf("rows after deleting the drafted message: %s", got)
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM threads`); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != "0 0 0 0 0 0" {
		t.Fatalf("rows after deleting the thread: %s", got)
	}
}

// OwnerThread ensures owner and creates a thread of it in network "n"; it
// returns the thread's id.
func OwnerThread(t *testing.T, s store.Ops, owner string) string {
	t.Helper()
	ctx := t.Context()
	Must(s.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: owner}))(t)
	return Must(s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: owner, Network: "n"}))(t).ID
}

// PutPushConfig stores push config id of owner's run "r" on thread, with
// the URL https://example.com/<id>.
func PutPushConfig(t *testing.T, s store.Ops, owner, thread, id string) {
	t.Helper()
	Must(s.PutPushConfig(t.Context(), &store.PutPushConfigParams{Config: store.PushConfig{OwnerID: owner, RunID: "r", ID: id,
		ThreadID: thread, URL: "https://example.com/" + id, Protocol: "1.0"}}))(t)
}
