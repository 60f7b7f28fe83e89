package storetest

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/store"
)

// testJobRunCreateDeferred: CreateJobRunParams.Deferred in a Store.Tx
// creates the job run and its message once the transaction commits (with a
// statement after it, or with nothing but the commit) and returns the job
// run as stored; a taken idempotency key is ErrConflict on every backend
// (never a Duplicate), a missing thread ErrNotFound, and nothing of the
// write stays.
func testJobRunCreateDeferred(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	others := newThread(t, s, &bundle{ctx: b.ctx, owner: b.other})
	ph := func(id string) *store.NewMessage {
		return &store.NewMessage{Message: message.Message{ID: id, Role: message.RoleAssistant, Agent: "a", Status: message.StatusQueued,
			Metadata: map[string]any{"job": id}}}
	}
	// create runs p deferred in a transaction, then, with follow, a
	// statement of the other owner.
	create := func(p *store.CreateJobRunParams, follow bool) (*store.JobRun, error) {
		p.Deferred = true
		var j *store.JobRun
		err := s.Tx(b.ctx, func(tx store.Tx) error {
			res, err := tx.CreateJobRun(b.ctx, p)
			if err != nil {
				return err
			}
			if res.Duplicate {
				t.Errorf("a deferred creation reported a duplicate: %+v", res)
			}
			if j = res.Run; !follow {
				return nil
			}
			_, err = tx.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.other, ID: others.ID})
			return err
		})
		return j, err
	}
	seq := int64(0)
	for _, follow := range []bool{true, false} {
		key := uuid.NewString()
		j, err := create(&store.CreateJobRunParams{OwnerID: b.owner, ID: "j-" + key, IdempotencyKey: key, Kind: "k", ThreadID: th.ID,
			Metadata: map[string]json.RawMessage{"ns": json.RawMessage(`{ "k": 1 }`)}, Append: ph("ph-" + key)}, follow)
		if err != nil {
			t.Fatalf("follow %v: %v", follow, err)
		}
		got := Must(s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: b.owner, IdempotencyKey: key}))(t)
		if j.ID != got.ID || j.ID != "j-"+key || j.OwnerID != got.OwnerID || j.Kind != got.Kind || j.ThreadID != got.ThreadID || j.Status != store.JobQueued ||
			got.Status != store.JobQueued || j.Attempt != got.Attempt || !j.CreatedAt.Equal(got.CreatedAt) || !j.UpdatedAt.Equal(got.UpdatedAt) ||
			!jsonEqual(j.Metadata["ns"], got.Metadata["ns"]) || !jsonEqual(got.Metadata["ns"], []byte(`{"k":1}`)) {
			t.Fatalf("follow %v: returned %+v, stored %+v", follow, j, got)
		}
		seq++
		if m := Must(s.GetMessage(b.ctx, &store.GetMessageParams{OwnerID: b.owner, ID: "ph-" + key}))(t); m.Seq != seq || m.Status != message.StatusQueued {
			t.Fatalf("follow %v: appended %+v, want seq %d", follow, m, seq)
		}
		// The same key again: a conflict, and its message is not written.
		_, err = create(&store.CreateJobRunParams{OwnerID: b.owner, ID: "j2-" + key, IdempotencyKey: key, Kind: "k", ThreadID: th.ID,
			Append: ph("ph2-" + key)}, follow)
		wantErr(t, err, store.ErrConflict)
		if got := Must(s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: b.owner, IdempotencyKey: key}))(t); got.ID != "j-"+key {
			t.Errorf("follow %v: the key's job run is now %s", follow, got.ID)
		}
		_, err = s.GetMessage(b.ctx, &store.GetMessageParams{OwnerID: b.owner, ID: "ph2-" + key})
		wantErr(t, err, store.ErrNotFound)
		// A missing thread, another owner's thread: not found.
		for _, id := range []string{"missing-" + key, others.ID} {
			other := uuid.NewString()
			_, err = create(&store.CreateJobRunParams{OwnerID: b.owner, IdempotencyKey: other, Kind: "k", ThreadID: id, Append: ph("ph3-" + other)}, follow)
			wantErr(t, err, store.ErrNotFound)
			_, err = s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: b.owner, IdempotencyKey: other})
			wantErr(t, err, store.ErrNotFound)
		}
	}
	if n := len(Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: th.ID}))(t)); int64(n) != seq {
		t.Errorf("%d messages, want %d", n, seq)
	}
	if n := len(Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.other, ThreadID: others.ID}))(t)); n != 0 {
		t.Errorf("the other owner's thread has %d messages, want 0", n)
	}
}

// testJobRunViaProcessing: a move ViaProcessing counts an attempt and
// starts the run as a move to processing would, in the same statement: a
// queued run completes at once (a claim made with the final write), fenced
// on the attempt read; a run that may not move to processing is refused.
// testJobRunDeferred: a deferred transition (TransitionJobRunParams.Deferred)
// in a Store.Tx moves the run as an immediate one does, with the draft it
// clears, once the transaction commits; a refused one — by status, by
// attempt, a missing run — fails the transaction with the transition's
// own error and nothing of the transaction stays; and one racing an open
// transaction that counts the attempt it expects waits for it.
func testJobRunDeferred(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	create := func() *store.JobRun {
		return Must(s.CreateJobRun(b.ctx, &store.CreateJobRunParams{OwnerID: b.owner, IdempotencyKey: uuid.NewString(), Kind: "k", ThreadID: th.ID}))(t).Run
	}
	// inTx runs p deferred in a transaction that appends a message first
	// and after, and returns the transaction's error and whether the
	// message stayed.
	inTx := func(p *store.TransitionJobRunParams) (int, error) {
		p.Deferred = true
		before := len(Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: th.ID}))(t))
		err := s.Tx(b.ctx, func(tx store.Tx) error {
			add := func() error {
				_, err := tx.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
					Messages: []store.NewMessage{{Message: message.User("m")}}})
				return err
			}
			if err := add(); err != nil {
				return err
			}
			if _, err := tx.TransitionJobRun(b.ctx, p); err != nil {
				return err
			}
			return add()
		})
		after := len(Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: th.ID}))(t))
		return after - before, err
	}
	// Allowed, through processing, fenced, with the draft cleared.
	j := create()
	m := Must(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: message.Message{Role: message.RoleAssistant, Status: message.StatusStreaming}}}}))(t)[0]
	Must(s.UpsertDraft(b.ctx, &store.UpsertDraftParams{OwnerID: b.owner, MessageID: m.ID, Text: "d"}))(t)
	if n, err := inTx(&store.TransitionJobRunParams{OwnerID: b.owner, ID: j.ID, To: store.JobCompleted,
		Fence: true, ViaProcessing: true, ClearDraft: m.ID}); err != nil || n != 2 {
		t.Fatalf("deferred move: %v (%d messages written)", err, n)
	}
	got := Must(s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: b.owner, ID: j.ID}))(t)
	if got.Status != store.JobCompleted || got.Attempt != 1 || got.StartedAt.IsZero() || got.FinishedAt.IsZero() {
		t.Fatalf("after the deferred move: %+v", got)
	}
	_, err := s.GetDraft(b.ctx, &store.GetDraftParams{OwnerID: b.owner, MessageID: m.ID})
	wantErr(t, err, store.ErrNotFound)
	// Refused: by status, by attempt, a missing run. Nothing stays.
	processing := create()
	Must(s.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: b.owner, ID: processing.ID, To: store.JobProcessing}))(t)
	for _, c := range []struct {
		name string
		p    store.TransitionJobRunParams
		from store.JobStatus // "" for a missing run
		why  string
	}{
		{"status", store.TransitionJobRunParams{ID: j.ID, To: store.JobProcessing}, store.JobCompleted, ""},
		{"attempt", store.TransitionJobRunParams{ID: processing.ID, To: store.JobCompleted, ExpectedAttempt: 2}, store.JobProcessing, "attempt 2"},
		{"missing", store.TransitionJobRunParams{ID: uuid.NewString(), To: store.JobCompleted}, "", ""},
	} {
		c.p.OwnerID = b.owner
		before := Must(s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: b.owner, ID: processing.ID}))(t)
		n, err := inTx(&c.p)
		if n != 0 {
			t.Errorf("%s: %d messages stayed", c.name, n)
		}
		if c.from == "" {
			wantErr(t, err, store.ErrNotFound)
			continue
		}
		te := wantAs[*store.TransitionError](t, err)
		if te.From != string(c.from) || te.To != string(c.p.To) || te.ID != c.p.ID || !strings.Contains(te.Reason, c.why) {
			t.Errorf("%s: TransitionError = %+v", c.name, te)
		}
		if after := Must(s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: b.owner, ID: processing.ID}))(t); !reflect.DeepEqual(after, before) {
			t.Errorf("%s: a refused move wrote: %+v, was %+v", c.name, after, before)
		}
	}
	// Racing a claim still open that counts the attempt expected: waits
	// for it, and moves once it commits.
	r := create()
	claimed, release := make(chan struct{}), make(chan struct{})
	claim := make(chan error, 1)
	go func() {
		claim <- s.Tx(b.ctx, func(tx store.Tx) error {
			if _, err := tx.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: b.owner, ID: r.ID, To: store.JobProcessing, Fence: true}); err != nil {
				return err
			}
			close(claimed)
			<-release
			return nil
		})
	}()
	select {
	case <-claimed:
	case err := <-claim:
		t.Fatalf("claim: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := inTx(&store.TransitionJobRunParams{OwnerID: b.owner, ID: r.ID, To: store.JobCompleted, ExpectedAttempt: 1})
		done <- err
	}()
	awaited(t, "the deferred move", done, claim, release)
	if err := <-claim; err != nil {
		t.Fatalf("claim: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("deferred move after the claim committed: %v", err)
	}
	if got := Must(s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: b.owner, ID: r.ID}))(t); got.Status != store.JobCompleted || got.Attempt != 1 {
		t.Fatalf("after the claim and the move: %+v", got)
	}
}
