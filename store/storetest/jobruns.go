package storetest

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/google/uuid"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/store"
)

func testJobRunIdempotency(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	key := "continue:" + uuid.NewString()
	p := &store.CreateJobRunParams{OwnerID: b.owner, IdempotencyKey: key, Kind: "continuation", ThreadID: th.ID,
		Metadata: map[string]json.RawMessage{"run_id": json.RawMessage(`"r1"`)}}
	res := Must(s.CreateJobRun(b.ctx, p))(t)
	j := res.Run
	if res.Duplicate || j.Status != store.JobQueued || j.Attempt != 0 || j.Kind != "continuation" || j.ThreadID != th.ID ||
		j.IdempotencyKey != key || !j.StartedAt.IsZero() || !j.FinishedAt.IsZero() || !jsonEqual(j.Metadata["run_id"], []byte(`"r1"`)) {
		t.Fatalf("CreateJobRun = %+v", res)
	}
	checkTime(t, "CreatedAt", j.CreatedAt)
	again := Must(s.CreateJobRun(b.ctx, &store.CreateJobRunParams{OwnerID: b.owner, IdempotencyKey: key, Kind: "other"}))(t)
	if !again.Duplicate || again.Run.ID != j.ID || again.Run.Kind != "continuation" {
		t.Fatalf("duplicate CreateJobRun = %+v", again)
	}
	byKey := Must(s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: b.owner, IdempotencyKey: key}))(t)
	byID := Must(s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: b.owner, ID: j.ID}))(t)
	if !reflect.DeepEqual(byKey, byID) || byID.ID != j.ID {
		t.Fatalf("GetJobRun by key %+v, by id %+v", byKey, byID)
	}
	// Keys are per owner.
	theirs := Must(s.CreateJobRun(b.ctx, &store.CreateJobRunParams{OwnerID: b.other, IdempotencyKey: key, Kind: "continuation"}))(t)
	if theirs.Duplicate || theirs.Run.ID == j.ID {
		t.Fatalf("another owner's key collided: %+v", theirs)
	}
	_, err := s.CreateJobRun(b.ctx, &store.CreateJobRunParams{OwnerID: b.other, IdempotencyKey: "k2", Kind: "x", ThreadID: th.ID})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.CreateJobRun(b.ctx, &store.CreateJobRunParams{OwnerID: b.owner, Kind: "x"})
	wantErr(t, err, store.ErrInvalid)
	_, err = s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: b.owner})
	wantErr(t, err, store.ErrInvalid)
}

func testJobRunConcurrentCreate(t *testing.T, s store.Store, b *bundle) {
	key := "evt-" + uuid.NewString()
	const n = 8
	results := make([]*store.CreateJobRunResult, n)
	errs := race(n, func(i int) (err error) {
		results[i], err = s.CreateJobRun(b.ctx, &store.CreateJobRunParams{OwnerID: b.owner, IdempotencyKey: key, Kind: "continuation"})
		return err
	})
	created := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("creator %d: %v", i, errs[i])
		}
		if !results[i].Duplicate {
			created++
		}
		if results[i].Run.ID != results[0].Run.ID {
			t.Fatalf("two rows for one key: %s and %s", results[i].Run.ID, results[0].Run.ID)
		}
	}
	if created != 1 {
		t.Fatalf("%d creators saw a new row, want 1", created)
	}
}

func testJobRunTransitions(t *testing.T, s store.Store, b *bundle) {
	checkJobRunAttempts(t, s, b)
	checkJobRunCanceledAndRefused(t, s, b)
}

// checkJobRunAttempts: a job run moves through processing, error, a retry
// and a re-pick to completed, its attempt counted and fenced, its metadata
// merged at each move.
func checkJobRunAttempts(t *testing.T, s store.Store, b *bundle) {
	j := Must(s.CreateJobRun(b.ctx, &store.CreateJobRunParams{OwnerID: b.owner, IdempotencyKey: uuid.NewString(), Kind: "k"}))(t).Run
	move := func(to store.JobStatus, errText string, attempt int) (*store.JobRun, error) {
		return s.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: b.owner, ID: j.ID, To: to, Error: errText, ExpectedAttempt: attempt,
			Metadata: map[string]json.RawMessage{string(to): json.RawMessage(`true`)}})
	}
	p1 := Must(move(store.JobProcessing, "", 0))(t)
	if p1.Status != store.JobProcessing || p1.Attempt != 1 || p1.StartedAt.IsZero() || !p1.FinishedAt.IsZero() {
		t.Fatalf("processing = %+v", p1)
	}
	e1 := Must(move(store.JobError, "model timeout", 1))(t)
	if e1.Status != store.JobError || e1.Error != "model timeout" || e1.FinishedAt.IsZero() || e1.Attempt != 1 {
		t.Fatalf("error = %+v", e1)
	}
	p2 := Must(move(store.JobProcessing, "", 1))(t)
	if p2.Attempt != 2 || !p2.FinishedAt.IsZero() || p2.StartedAt.Before(p1.StartedAt) {
		t.Fatalf("retry = %+v", p2)
	}
	// Picked up again after a crash, without having finished.
	p3 := Must(move(store.JobProcessing, "", 0))(t)
	if p3.Attempt != 3 {
		t.Fatalf("re-pick = %+v", p3)
	}
	// A worker of attempt 2 cannot finish attempt 3.
	_, err := move(store.JobCompleted, "", 2)
	te := wantAs[*store.TransitionError](t, err)
	if te.Reason == "" {
		t.Fatalf("TransitionError without a reason: %+v", te)
	}
	done := Must(move(store.JobCompleted, "", 3))(t)
	if done.Status != store.JobCompleted || done.Error != "" || done.FinishedAt.IsZero() || done.Attempt != 3 {
		t.Fatalf("completed = %+v", done)
	}
	for _, k := range []string{"processing", "error", "completed"} {
		if !jsonEqual(done.Metadata[k], []byte("true")) {
			t.Fatalf("metadata = %s", done.Metadata)
		}
	}
	checkJobRunFinal(t, s, b, done, move)
}

// checkJobRunFinal: done, a completed job run, refuses every move (move
// makes one) with a TransitionError from completed, and keeps what it was.
func checkJobRunFinal(t *testing.T, s store.Store, b *bundle, done *store.JobRun, move func(store.JobStatus, string, int) (*store.JobRun, error)) {
	for _, to := range []store.JobStatus{store.JobProcessing, store.JobCompleted, store.JobQueued, store.JobError, store.JobCanceled} {
		_, err := move(to, "", 0)
		te := wantAs[*store.TransitionError](t, err)
		wantErr(t, err, store.ErrConflict)
		if te.From != "completed" || te.To != string(to) {
			t.Fatalf("TransitionError = %+v", te)
		}
	}
	got := Must(s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: b.owner, ID: done.ID}))(t)
	if !reflect.DeepEqual(got, done) {
		t.Fatalf("refused transitions wrote: %+v", got)
	}
}

// checkJobRunCanceledAndRefused: a queued job run is canceled with its
// error; another cannot complete unclaimed, move to an unknown status or be
// moved by another owner.
func checkJobRunCanceledAndRefused(t *testing.T, s store.Store, b *bundle) {
	q := Must(s.CreateJobRun(b.ctx, &store.CreateJobRunParams{OwnerID: b.owner, IdempotencyKey: uuid.NewString(), Kind: "k"}))(t).Run
	c := Must(s.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: b.owner, ID: q.ID, To: store.JobCanceled, Error: "user canceled"}))(t)
	if c.Status != store.JobCanceled || c.Error != "user canceled" {
		t.Fatalf("canceled = %+v", c)
	}
	q2 := Must(s.CreateJobRun(b.ctx, &store.CreateJobRunParams{OwnerID: b.owner, IdempotencyKey: uuid.NewString(), Kind: "k"}))(t).Run
	_, err := s.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: b.owner, ID: q2.ID, To: store.JobCompleted})
	wantAs[*store.TransitionError](t, err)
	_, err = s.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: b.owner, ID: q2.ID, To: "running"})
	wantErr(t, err, store.ErrInvalid)
	_, err = s.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: b.other, ID: q2.ID, To: store.JobProcessing})
	wantErr(t, err, store.ErrNotFound)
}

// testJobRunAppend: CreateJobRun with Append appends the message to the
// thread when it creates the job run, numbered after the thread's
// messages, and not when the job run is a duplicate; a missing thread
// creates neither.
func testJobRunAppend(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	Must(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID, Messages: sampleMessages()[:2]}))(t)
	key := uuid.NewString()
	ph := func(id string) *store.NewMessage {
		return &store.NewMessage{Message: message.Message{ID: id, Role: message.RoleAssistant, Agent: "a", Status: message.StatusQueued,
			Metadata: map[string]any{"job": "j1"}}}
	}
	res := Must(s.CreateJobRun(b.ctx, &store.CreateJobRunParams{OwnerID: b.owner, ID: "j1-" + key, IdempotencyKey: key, Kind: "k", ThreadID: th.ID,
		Append: ph("ph-" + key)}))(t)
	if res.Duplicate || res.Run.ID != "j1-"+key || res.Run.ThreadID != th.ID {
		t.Fatalf("created %+v", res)
	}
	m := Must(s.GetMessage(b.ctx, &store.GetMessageParams{OwnerID: b.owner, ID: "ph-" + key}))(t)
	if m.Seq != 3 || m.ThreadID != th.ID || m.Status != message.StatusQueued || m.Agent != "a" || m.Metadata["job"] != "j1" {
		t.Fatalf("appended %+v", m)
	}
	again := Must(s.CreateJobRun(b.ctx, &store.CreateJobRunParams{OwnerID: b.owner, ID: "j2-" + key, IdempotencyKey: key, Kind: "k", ThreadID: th.ID,
		Append: ph("ph2-" + key)}))(t)
	if !again.Duplicate || again.Run.ID != "j1-"+key {
		t.Fatalf("again %+v", again)
	}
	_, err := s.GetMessage(b.ctx, &store.GetMessageParams{OwnerID: b.owner, ID: "ph2-" + key})
	wantErr(t, err, store.ErrNotFound)
	next := Must(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID, Messages: sampleMessages()[2:3]}))(t)
	if next[0].Seq != 4 {
		t.Fatalf("next append at seq %d, want 4", next[0].Seq)
	}
	other := uuid.NewString()
	_, err = s.CreateJobRun(b.ctx, &store.CreateJobRunParams{OwnerID: b.owner, IdempotencyKey: other, Kind: "k", ThreadID: "missing-" + other,
		Append: ph("ph3-" + other)})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: b.owner, IdempotencyKey: other})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.CreateJobRun(b.ctx, &store.CreateJobRunParams{OwnerID: b.owner, IdempotencyKey: other, Kind: "k", Append: ph("ph4-" + other)})
	wantErr(t, err, store.ErrInvalid)
}

// testJobRunClearDraft: a transition with ClearDraft deletes the message's
// draft with it, only if the move is made (a refused move writes nothing),
// with or without metadata; a missing draft, or another owner's, is left
// alone without an error.
func testJobRunClearDraft(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	m := Must(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: message.Message{Role: message.RoleAssistant, Status: message.StatusStreaming}}}}))(t)[0]
	draft := func() {
		Must(s.UpsertDraft(b.ctx, &store.UpsertDraftParams{OwnerID: b.owner, MessageID: m.ID, Text: "Working…"}))(t)
	}
	hasDraft := func() bool {
		_, err := s.GetDraft(b.ctx, &store.GetDraftParams{OwnerID: b.owner, MessageID: m.ID})
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	for _, md := range []map[string]json.RawMessage{nil, {"k": json.RawMessage(`1`)}} {
		j := Must(s.CreateJobRun(b.ctx, &store.CreateJobRunParams{OwnerID: b.owner, IdempotencyKey: uuid.NewString(), Kind: "k"}))(t).Run
		Must(s.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: b.owner, ID: j.ID, To: store.JobProcessing}))(t)
		draft()
		// Refused (attempt 2 is not the current attempt): the draft stays.
		_, err := s.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: b.owner, ID: j.ID, To: store.JobCompleted,
			ExpectedAttempt: 2, Metadata: md, ClearDraft: m.ID})
		wantAs[*store.TransitionError](t, err)
		if !hasDraft() {
			t.Fatalf("metadata %v: a refused transition deleted the draft", md)
		}
		// Another owner's transition deletes nothing of this owner's.
		_, err = s.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: b.other, ID: j.ID, To: store.JobCompleted, ClearDraft: m.ID})
		wantErr(t, err, store.ErrNotFound)
		if !hasDraft() {
			t.Fatalf("metadata %v: another owner's transition deleted the draft", md)
		}
		done := Must(s.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: b.owner, ID: j.ID, To: store.JobCompleted,
			ExpectedAttempt: 1, Metadata: md, ClearDraft: m.ID}))(t)
		if done.Status != store.JobCompleted || hasDraft() {
			t.Fatalf("metadata %v: completed %+v, draft left: %v", md, done, hasDraft())
		}
	}
	// No draft: nothing to delete, no error.
	j := Must(s.CreateJobRun(b.ctx, &store.CreateJobRunParams{OwnerID: b.owner, IdempotencyKey: uuid.NewString(), Kind: "k"}))(t).Run
	Must(s.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: b.owner, ID: j.ID, To: store.JobCanceled, ClearDraft: m.ID}))(t)
}

// testJobRunFenceZero: with Fence, ExpectedAttempt 0 fences too. A claimer
// that read a job run never claimed (attempt 0) moves it only if no other
// claim counted an attempt since; of concurrent such claimers, one wins.
func testJobRunFenceZero(t *testing.T, s store.Store, b *bundle) {
	create := func() *store.JobRun {
		return Must(s.CreateJobRun(b.ctx, &store.CreateJobRunParams{OwnerID: b.owner, IdempotencyKey: uuid.NewString(), Kind: "k"}))(t).Run
	}
	// With and without metadata: one conditional statement, or a locked
	// read and an update.
	for _, md := range []map[string]json.RawMessage{nil, {"claim": json.RawMessage(`true`)}} {
		claim := func(id string) (*store.JobRun, error) {
			return s.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: b.owner, ID: id, To: store.JobProcessing,
				ExpectedAttempt: 0, Fence: true, Metadata: md})
		}
		// Not moved on since it was read: the fenced claim succeeds.
		j := create()
		p := Must(claim(j.ID))(t)
		if p.Status != store.JobProcessing || p.Attempt != 1 {
			t.Fatalf("fenced claim from attempt 0 = %+v", p)
		}
		// Moved on (another claim counted attempt 1): it fails and writes
		// nothing; without Fence, 0 does not fence.
		_, err := claim(j.ID)
		te := wantAs[*store.TransitionError](t, err)
		wantErr(t, err, store.ErrConflict)
		if te.From != string(store.JobProcessing) || te.To != string(store.JobProcessing) || te.Reason == "" {
			t.Fatalf("TransitionError = %+v", te)
		}
		if got := Must(s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: b.owner, ID: j.ID}))(t); !reflect.DeepEqual(got, p) {
			t.Fatalf("refused fenced transition wrote: %+v, was %+v", got, p)
		}
		if u := Must(s.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: b.owner, ID: j.ID, To: store.JobProcessing}))(t); u.Attempt != 2 {
			t.Fatalf("unfenced claim = %+v", u)
		}
		// Another move from attempt 0, fenced: a queued run is canceled.
		c := Must(s.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: b.owner, ID: create().ID, To: store.JobCanceled,
			Error: "canceled", Fence: true, Metadata: md}))(t)
		if c.Status != store.JobCanceled || c.Attempt != 0 {
			t.Fatalf("fenced cancel from attempt 0 = %+v", c)
		}
	}
	// Concurrent claimers that all read attempt 0: one claim counts.
	j := create()
	const n = 8
	errs := race(n, func(int) error {
		_, err := s.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: b.owner, ID: j.ID, To: store.JobProcessing, Fence: true})
		return err
	})
	oneWinner(t, errs)
	if got := Must(s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: b.owner, ID: j.ID}))(t); got.Attempt != 1 {
		t.Fatalf("%d concurrent fenced claims from attempt 0 counted %d attempts", n, got.Attempt)
	}
}

func testJobRunViaProcessing(t *testing.T, s store.Store, b *bundle) {
	create := func() *store.JobRun {
		return Must(s.CreateJobRun(b.ctx, &store.CreateJobRunParams{OwnerID: b.owner, IdempotencyKey: uuid.NewString(), Kind: "k"}))(t).Run
	}
	for _, md := range []map[string]json.RawMessage{nil, {"claim": json.RawMessage(`true`)}} {
		move := func(id string, to store.JobStatus, attempt int) (*store.JobRun, error) {
			return s.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: b.owner, ID: id, To: to, Error: "e",
				ExpectedAttempt: attempt, Fence: true, ViaProcessing: true, Metadata: md})
		}
		j := create()
		c := Must(move(j.ID, store.JobCompleted, 0))(t)
		if c.Status != store.JobCompleted || c.Attempt != 1 || c.StartedAt.IsZero() || c.FinishedAt.IsZero() || c.Error != "" {
			t.Fatalf("queued → completed via processing = %+v", c)
		}
		// Once more from the attempt read: refused, nothing written.
		_, err := move(j.ID, store.JobCompleted, 0)
		te := wantAs[*store.TransitionError](t, err)
		if te.From != string(store.JobCompleted) {
			t.Fatalf("TransitionError = %+v", te)
		}
		if got := Must(s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: b.owner, ID: j.ID}))(t); !reflect.DeepEqual(got, c) {
			t.Fatalf("refused move wrote: %+v, was %+v", got, c)
		}
		// Fenced: another claim counted an attempt since the read.
		j = create()
		Must(s.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: b.owner, ID: j.ID, To: store.JobProcessing}))(t)
		Must(s.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: b.owner, ID: j.ID, To: store.JobError, Error: "x"}))(t)
		_, err = move(j.ID, store.JobCompleted, 0)
		wantAs[*store.TransitionError](t, err)
		// From error, at the attempt read: to error again, an attempt more.
		e := Must(move(j.ID, store.JobError, 1))(t)
		if e.Status != store.JobError || e.Attempt != 2 || e.Error != "e" {
			t.Fatalf("error → error via processing = %+v", e)
		}
	}
	// Concurrent claimers of one queued run: one completes it.
	j := create()
	errs := race(8, func(int) error {
		_, err := s.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: b.owner, ID: j.ID, To: store.JobCompleted,
			Fence: true, ViaProcessing: true})
		return err
	})
	oneWinner(t, errs)
	if got := Must(s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: b.owner, ID: j.ID}))(t); got.Attempt != 1 || got.Status != store.JobCompleted {
		t.Fatalf("concurrent claims via processing left %+v", got)
	}
}

// testJobRunHold: a Hold (TransitionJobRunParams.Hold) asserts a claim
// without moving the run: it passes while the run is processing at the
// attempt given, counting no attempt (immediate, with metadata, deferred
// in a transaction), and is refused once the run moved on (another
// attempt, another status) — a deferred one then fails its transaction,
// and nothing of it stays. Hold must assert processing.
func testJobRunHold(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	j := Must(s.CreateJobRun(b.ctx, &store.CreateJobRunParams{OwnerID: b.owner, IdempotencyKey: uuid.NewString(), Kind: "k", ThreadID: th.ID}))(t).Run
	hold := func(p store.TransitionJobRunParams) error {
		p.OwnerID, p.ID, p.To, p.Hold = b.owner, j.ID, store.JobProcessing, true
		if !p.Deferred {
			_, err := s.TransitionJobRun(b.ctx, &p)
			return err
		}
		return s.Tx(b.ctx, func(tx store.Tx) error {
			if _, err := tx.TransitionJobRun(b.ctx, &p); err != nil {
				return err
			}
			_, err := tx.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
				Messages: []store.NewMessage{{Message: message.User("m")}}})
			return err
		})
	}
	count := func() int {
		return len(Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: th.ID}))(t))
	}
	// Queued: nothing to hold.
	wantAs[*store.TransitionError](t, hold(store.TransitionJobRunParams{}))
	claimed := Must(s.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: b.owner, ID: j.ID, To: store.JobProcessing, Fence: true}))(t)
	for _, p := range []store.TransitionJobRunParams{
		{ExpectedAttempt: 1},
		{ExpectedAttempt: 1, Metadata: map[string]json.RawMessage{"held": json.RawMessage(`true`)}},
		{ExpectedAttempt: 1, Deferred: true},
	} {
		if err := hold(p); err != nil {
			t.Fatalf("hold %+v of the claim: %v", p, err)
		}
		got := Must(s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: b.owner, ID: j.ID}))(t)
		if got.Status != store.JobProcessing || got.Attempt != 1 || !got.StartedAt.Equal(claimed.StartedAt) {
			t.Fatalf("hold %+v moved the run: %+v, was %+v", p, got, claimed)
		}
	}
	if n := count(); n != 1 {
		t.Fatalf("the held transaction left %d messages, want 1", n)
	}
	// Another attempt, fenced even at 0.
	for _, a := range []int{0, 2} {
		te := wantAs[*store.TransitionError](t, hold(store.TransitionJobRunParams{ExpectedAttempt: a}))
		if te.Reason == "" {
			t.Fatalf("hold at attempt %d: %+v", a, te)
		}
	}
	// Taken over: the run moved to error at its attempt.
	Must(s.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: b.owner, ID: j.ID, To: store.JobError, Error: "taken", ExpectedAttempt: 1}))(t)
	for _, deferred := range []bool{false, true} {
		err := hold(store.TransitionJobRunParams{ExpectedAttempt: 1, Deferred: deferred})
		te := wantAs[*store.TransitionError](t, err)
		wantErr(t, err, store.ErrConflict)
		if te.From != string(store.JobError) {
			t.Fatalf("hold of a run in error (deferred %v): %+v", deferred, te)
		}
	}
	if n := count(); n != 1 {
		t.Fatalf("a refused hold's transaction left %d messages, want 1", n)
	}
	if got := Must(s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: b.owner, ID: j.ID}))(t); got.Status != store.JobError || got.Attempt != 1 {
		t.Fatalf("refused holds wrote: %+v", got)
	}
	_, err := s.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: b.owner, ID: j.ID, To: store.JobCompleted, Hold: true})
	wantErr(t, err, store.ErrInvalid)
}
