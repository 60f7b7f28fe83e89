package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
)

// testCheckpointNewThread: a checkpoint saved with NewThread creates its
// thread and the thread's first messages in the same write, as
// CreateThread does; refused (a taken thread id, a missing owner or
// parent, a stale fence, bad params), nothing of it is written.
func testCheckpointNewThread(t *testing.T, s store.Store, b *bundle) {
	run := "run-" + uuid.NewString()
	id := "thread-" + uuid.NewString()
	first := message.User("hello")
	first.ID = run + "-m1"
	create := &store.CreateThreadParams{Name: "new", Network: "net", ActiveAgent: "a",
		Metadata: map[string]json.RawMessage{"ns": json.RawMessage(`{"k":1}`)},
		Messages: []store.NewMessage{{Message: first}, {Message: message.Assistant("a", "hi")}}}
	var th store.Thread
	cp := Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, id, 1), NewThread: create, Thread: &th}))(t)
	got := Must(s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.owner, ID: id}))(t)
	if th.ID != id || th.OwnerID != b.owner || th.Name != "new" || th.Network != "net" || th.ActiveAgent != "a" || th.Version != 1 ||
		!th.CreatedAt.Equal(got.CreatedAt) || !th.UpdatedAt.Equal(got.UpdatedAt) || string(th.Metadata["ns"]) != string(got.Metadata["ns"]) || !strings.Contains(string(got.Metadata["ns"]), `"k"`) {
		t.Fatalf("thread returned %+v, stored %+v", th, got)
	}
	if cp.ThreadID != id || cp.Step != 1 || cp.ParentID != "" || cp.CreatedAt.IsZero() {
		t.Fatalf("checkpoint %+v", cp)
	}
	list := Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: id}))(t)
	if len(list) != 2 || list[0].ID != first.ID || list[0].Seq != 1 || list[1].Text() != "hi" || list[1].Seq != 2 {
		t.Fatalf("messages %+v", list)
	}
	// The thread then takes appends after its first messages.
	more := Must(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: id,
		Messages: []store.NewMessage{{Message: message.User("again")}}}))(t)
	if more[0].Seq != 3 {
		t.Fatalf("next message's seq %d, want 3", more[0].Seq)
	}
	// Without messages, and without Thread.
	bare := "thread-" + uuid.NewString()
	Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState("run-"+uuid.NewString(), bare, 1),
		NewThread: &store.CreateThreadParams{OwnerID: b.owner, ID: bare}}))(t)
	Must(s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.owner, ID: bare}))(t)
	checkNewThreadRefused(t, s, b, run, id)
}

// checkNewThreadRefused: a checkpoint saved with NewThread is refused — a
// taken thread id (id), a missing owner or parent, a stale fence (run's),
// bad params, a transaction rolled back — and writes nothing.
func checkNewThreadRefused(t *testing.T, s store.Store, b *bundle, run, id string) {
	// A taken thread id: a conflict, and the run writes nothing.
	again := "run-" + uuid.NewString()
	_, err := s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(again, id, 1), NewThread: &store.CreateThreadParams{}})
	wantErr(t, err, store.ErrConflict)
	if _, err := s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner, RunID: again}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a taken thread id: the checkpoint: %v, want ErrNotFound", err)
	}
	// A missing owner, a missing parent: not found.
	lost := "thread-" + uuid.NewString()
	_, err = s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: "nobody-" + uuid.NewString(), State: newState(again, lost, 1),
		NewThread: &store.CreateThreadParams{Messages: []store.NewMessage{{Message: message.User("x")}}}})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(again, lost, 1),
		NewThread: &store.CreateThreadParams{ParentID: "missing-" + uuid.NewString()}})
	wantErr(t, err, store.ErrNotFound)
	newThreadAbsent(t, s, b, "missing owner or parent", lost, again)
	// A stale fence: the thread is not created either.
	_, err = s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, lost, 1), NewThread: &store.CreateThreadParams{}})
	wantAs[*store.StaleWriteError](t, err)
	if _, err := s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.owner, ID: lost}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a stale fence: the thread: %v, want ErrNotFound", err)
	}
	// Bad params: invalid.
	for what, p := range map[string]*store.SaveCheckpointParams{
		"no State.ThreadID": {OwnerID: b.owner, State: newState(again, "", 1), NewThread: &store.CreateThreadParams{}},
		"another ID":        {OwnerID: b.owner, State: newState(again, lost, 1), NewThread: &store.CreateThreadParams{ID: "other"}},
		"another owner":     {OwnerID: b.owner, State: newState(again, lost, 1), NewThread: &store.CreateThreadParams{OwnerID: b.other}},
		"Messages too":      {OwnerID: b.owner, State: newState(again, lost, 1), NewThread: &store.CreateThreadParams{}, Messages: []store.NewMessage{{Message: message.User("x")}}},
		"bad metadata":      {OwnerID: b.owner, State: newState(again, lost, 1), NewThread: &store.CreateThreadParams{Metadata: map[string]json.RawMessage{"ns": json.RawMessage(`{`)}}},
	} {
		_, err := s.SaveCheckpoint(b.ctx, p)
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", what, err)
		}
	}
	newThreadAbsent(t, s, b, "bad params", lost, again)
	// In a transaction that rolls back, nothing stays.
	boom := errors.New("boom")
	err = s.Tx(b.ctx, func(tx store.Tx) error {
		if _, err := tx.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(again, lost, 1),
			NewThread: &store.CreateThreadParams{Messages: []store.NewMessage{{Message: message.User("rolled back")}}}}); err != nil {
			return err
		}
		return boom
	})
	wantErr(t, err, boom)
	newThreadAbsent(t, s, b, "rolled back", lost, again)
}

// newThreadAbsent checks that neither the thread threadID nor a checkpoint
// of run runID was written (what says after what).
func newThreadAbsent(t *testing.T, s store.Store, b *bundle, what, threadID, runID string) {
	t.Helper()
	if _, err := s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.owner, ID: threadID}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("%s: the thread: %v, want ErrNotFound", what, err)
	}
	if _, err := s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner, RunID: runID}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("%s: the checkpoint: %v, want ErrNotFound", what, err)
	}
}

// testCheckpointNewThreadDeferred: SaveCheckpointParams.Deferred in a
// Store.Tx writes what the immediate write does once the transaction
// commits, and returns the checkpoint as stored; it keeps the scope it was
// deferred in when a statement of another owner follows; its refusals — a
// taken thread id, a missing owner, a stale fence — fail the transaction
// with the write's own error, and nothing of it stays.
func testCheckpointNewThreadDeferred(t *testing.T, s store.Store, b *bundle) {
	others := newThread(t, s, &bundle{ctx: b.ctx, owner: b.other})
	save := func(p *store.SaveCheckpointParams) (*store.Checkpoint, error) {
		return saveDeferred(s, b, others, p, true)
	}
	run, id := "run-"+uuid.NewString(), "thread-"+uuid.NewString()
	cp, err := save(&store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, id, 1),
		NewThread: &store.CreateThreadParams{Name: "deferred", Messages: []store.NewMessage{{Message: message.User("hello")}}}})
	if err != nil {
		t.Fatal(err)
	}
	got := Must(s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner, RunID: run}))(t)
	if cp.ID != got.ID || !cp.CreatedAt.Equal(got.CreatedAt) || cp.ThreadID != id || cp.Step != 1 || cp.ParentID != "" {
		t.Fatalf("returned %+v, stored %+v", cp, got)
	}
	if th := Must(s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.owner, ID: id}))(t); th.Name != "deferred" {
		t.Fatalf("thread %+v", th)
	}
	if list := Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: id}))(t); len(list) != 1 || list[0].Seq != 1 {
		t.Fatalf("messages %+v", list)
	}
	again, lost := "run-"+uuid.NewString(), "thread-"+uuid.NewString()
	_, err = save(&store.SaveCheckpointParams{OwnerID: b.owner, State: newState(again, id, 1), NewThread: &store.CreateThreadParams{}})
	wantErr(t, err, store.ErrConflict)
	if _, err := s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner, RunID: again}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a taken thread id: the checkpoint: %v, want ErrNotFound", err)
	}
	_, err = save(&store.SaveCheckpointParams{OwnerID: "nobody-" + uuid.NewString(), State: newState(again, lost, 1),
		NewThread: &store.CreateThreadParams{Messages: []store.NewMessage{{Message: message.User("x")}}}})
	wantErr(t, err, store.ErrNotFound)
	newThreadAbsent(t, s, b, "missing owner", lost, again)
	_, err = save(&store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, lost, 1), NewThread: &store.CreateThreadParams{}})
	stale := wantAs[*store.StaleWriteError](t, err)
	if stale.RunID != run || stale.LatestID != cp.ID || stale.LatestStep != 1 {
		t.Errorf("StaleWriteError = %+v, want the run's newest checkpoint %s at step 1", stale, cp.ID)
	}
	if _, err := s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.owner, ID: lost}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a stale fence: the thread: %v, want ErrNotFound", err)
	}
}

// testCheckpointDeferred: SaveCheckpointParams.Deferred on an existing
// thread — with messages, and alone — writes what the immediate write does
// once the transaction commits (with a statement after it, or with nothing
// but the commit), returns the checkpoint as stored; its refusals — a stale
// fence, a missing thread — fail the transaction with the write's own
// error, and nothing of it stays.
func testCheckpointDeferred(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	others := newThread(t, s, &bundle{ctx: b.ctx, owner: b.other})
	save := func(p *store.SaveCheckpointParams, follow bool) (*store.Checkpoint, error) {
		return saveDeferred(s, b, others, p, follow)
	}
	run := "run-" + uuid.NewString()
	first, last := checkDeferredWrites(t, s, b, th, run, save)
	checkDeferredRefused(t, s, b, th, others, run, first, last, save)
	if n := len(Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.other, ThreadID: others.ID}))(t)); n != 0 {
		t.Errorf("the other owner's thread has %d messages, want 0", n)
	}
}

// saveDeferred saves p deferred in a transaction of s, then, with follow,
// reads others (a thread of the other owner's) in the same transaction; it
// returns the checkpoint and the transaction's error.
func saveDeferred(s store.Store, b *bundle, others *store.Thread, p *store.SaveCheckpointParams, follow bool) (*store.Checkpoint, error) {
	p.Deferred = true
	var cp *store.Checkpoint
	err := s.Tx(b.ctx, func(tx store.Tx) error {
		var err error
		if cp, err = tx.SaveCheckpoint(b.ctx, p); err != nil || !follow {
			return err
		}
		_, err = tx.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.other, ID: others.ID})
		return err
	})
	return cp, err
}

// checkDeferredWrites: deferred checkpoints of run on th, with messages
// and alone, followed by a statement or by the commit alone, write what
// the immediate write does and are returned as stored. It returns the
// run's first checkpoint and its last.
func checkDeferredWrites(t *testing.T, s store.Store, b *bundle, th *store.Thread, run string,
	save func(*store.SaveCheckpointParams, bool) (*store.Checkpoint, error)) (first, last *store.Checkpoint) {
	first = Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, th.ID, 1)}))(t)
	parent := first
	for i, follow := range []bool{true, false} {
		step := 2 + 2*i
		// With messages.
		m := message.User(fmt.Sprintf("deferred %d", step))
		m.ID = fmt.Sprintf("%s-m%d", run, step)
		cp, err := save(&store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, th.ID, step), ParentID: parent.ID,
			Messages: []store.NewMessage{{Message: m}, {Message: message.Assistant("a", "ok")}}}, follow)
		if err != nil {
			t.Fatalf("follow %v: %v", follow, err)
		}
		got := Must(s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner, RunID: run}))(t)
		if cp.ID != got.ID || !cp.CreatedAt.Equal(got.CreatedAt) || cp.ThreadID != th.ID || cp.Step != step || cp.ParentID != parent.ID || got.ParentID != parent.ID {
			t.Fatalf("follow %v: returned %+v, stored %+v", follow, cp, got)
		}
		list := Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: th.ID}))(t)
		if n := len(list); n != 2*(i+1) || list[n-2].ID != m.ID || list[n-2].Seq != int64(n-1) || list[n-1].Text() != "ok" || list[n-1].Seq != int64(n) {
			t.Fatalf("follow %v: messages %+v", follow, list)
		}
		// Alone.
		alone, err := save(&store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, th.ID, step+1), ParentID: cp.ID}, follow)
		if err != nil {
			t.Fatalf("follow %v: alone: %v", follow, err)
		}
		got = Must(s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner, RunID: run}))(t)
		if alone.ID != got.ID || !alone.CreatedAt.Equal(got.CreatedAt) || got.ParentID != cp.ID || got.Step != step+1 {
			t.Fatalf("follow %v: alone: returned %+v, stored %+v", follow, alone, got)
		}
		parent = alone
	}
	return first, parent
}

// checkDeferredRefused: a deferred checkpoint refused — a stale fence by
// parent and by step (run's newest is parent), a missing thread, another
// owner's (others) — fails the transaction with the write's own error, and
// nothing of it stays.
func checkDeferredRefused(t *testing.T, s store.Store, b *bundle, th, others *store.Thread, run string, first, parent *store.Checkpoint,
	save func(*store.SaveCheckpointParams, bool) (*store.Checkpoint, error)) {
	msgs := len(Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: th.ID}))(t))
	unchanged := func(what string) {
		t.Helper()
		wantLatest(t, s, b, run, parent.ID, parent.Step)
		if n := len(Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: th.ID}))(t)); n != msgs {
			t.Errorf("%s: %d messages, want %d", what, n, msgs)
		}
	}
	for _, follow := range []bool{true, false} {
		// A stale fence, by parent and by step: the run's newest checkpoint
		// in the error.
		for what, p := range map[string]*store.SaveCheckpointParams{
			"stale parent": {OwnerID: b.owner, State: newState(run, th.ID, 9), ParentID: first.ID, Messages: []store.NewMessage{{Message: message.User("lost")}}},
			"stale step":   {OwnerID: b.owner, State: newState(run, th.ID, parent.Step), ParentID: parent.ID},
		} {
			_, err := save(p, follow)
			stale := wantAs[*store.StaleWriteError](t, err)
			if stale.RunID != run || stale.LatestID != parent.ID || stale.LatestStep != parent.Step {
				t.Errorf("%s, follow %v: StaleWriteError = %+v, want the run's newest checkpoint %s at step %d", what, follow, stale, parent.ID, parent.Step)
			}
			unchanged(what)
		}
		// A missing thread, another owner's thread: not found.
		for what, id := range map[string]string{"missing thread": "missing-" + uuid.NewString(), "other's thread": others.ID} {
			other := "run-" + uuid.NewString()
			_, err := save(&store.SaveCheckpointParams{OwnerID: b.owner, State: newState(other, id, 1),
				Messages: []store.NewMessage{{Message: message.User("x")}}}, follow)
			wantErr(t, err, store.ErrNotFound)
			if _, err := s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner, RunID: other}); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s: the checkpoint: %v, want ErrNotFound", what, err)
			}
		}
	}
}

func testCheckpointConcurrentWriters(t *testing.T, s store.Store, b *bundle) {
	run := "run-" + uuid.NewString()
	base := Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, "", 1)}))(t)
	ids := make([]string, 6)
	winner := oneWinner(t, race(len(ids), func(i int) error {
		// Half fence by parent, half by step only; all write step 2.
		p := &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, "", 2)}
		if i%2 == 0 {
			p.ParentID = base.ID
		}
		cp, err := s.SaveCheckpoint(b.ctx, p)
		if err == nil {
			ids[i] = cp.ID
		}
		return err
	}))
	wantLatest(t, s, b, run, ids[winner], 2)
}

func testCheckpointIncompatible(t *testing.T, s store.Store, b *bundle) {
	run := "run-" + uuid.NewString()
	cp := Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, "", 0)}))(t)
	_, err := s.GetCheckpoint(b.ctx, &store.GetCheckpointParams{OwnerID: b.owner, ID: cp.ID, Fingerprint: "fp-2"})
	ie := wantAs[*runstate.IncompatibleError](t, err)
	wantErr(t, err, store.ErrIncompatible)
	wantErr(t, err, runstate.ErrIncompatible)
	if ie.Checkpoint != "fp-1" || ie.Current != "fp-2" || ie.Network != "support" {
		t.Fatalf("IncompatibleError = %+v", ie)
	}
	_, err = s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner, RunID: run, Fingerprint: "fp-2"})
	wantErr(t, err, store.ErrIncompatible)
	Must(s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner, RunID: run, Fingerprint: "fp-1"}))(t)
}

func testCheckpointInvalid(t *testing.T, s store.Store, b *bundle) {
	bad := newState("run-"+uuid.NewString(), "", 1)
	bad.Status = "sleeping"
	for name, p := range map[string]*store.SaveCheckpointParams{
		"nil state":     {OwnerID: b.owner},
		"bad status":    {OwnerID: b.owner, State: bad},
		"no run":        {OwnerID: b.owner, State: newState("", "", 1)},
		"negative step": {OwnerID: b.owner, State: newState("run-x", "", -1)},
		"no owner":      {State: newState("run-x", "", 1)},
	} {
		_, err := s.SaveCheckpoint(b.ctx, p)
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: error = %v, want ErrInvalid", name, err)
		}
	}
	th := newThread(t, s, b)
	_, err := s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.other, State: newState("run-"+uuid.NewString(), th.ID, 1)})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState("run-"+uuid.NewString(), "missing", 1)})
	wantErr(t, err, store.ErrNotFound)
}

func testCheckpointCorrupt(t *testing.T, s store.Store, b *bundle, corrupt func(context.Context, store.Store, string, []byte) error) {
	if corrupt == nil {
		t.Skip("storetest: no WithCorruptCheckpoint option")
	}
	run := "run-" + uuid.NewString()
	cp1 := Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, "", 1)}))(t)
	cp2 := Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, "", 2)}))(t)
	other := newState("run-"+uuid.NewString(), "", 2)
	for name, tc := range map[string]struct {
		bytes  []byte
		target error
	}{
		"garbage":        {[]byte("\x00\xffnot json"), runstate.ErrCorrupt},
		"truncated":      {encodeState(t, newState(run, "", 2))[:40], runstate.ErrCorrupt},
		"future version": {[]byte(`{"schema_version":99}`), runstate.ErrUnknownVersion},
		"other run":      {encodeState(t, other), runstate.ErrCorrupt},
		"empty":          {[]byte{}, runstate.ErrCorrupt},
	} {
		if err := corrupt(b.ctx, s, cp2.ID, tc.bytes); err != nil {
			t.Fatalf("%s: corrupting: %v", name, err)
		}
		for _, read := range []func() error{
			func() error {
				return errOf(s.GetCheckpoint(b.ctx, &store.GetCheckpointParams{OwnerID: b.owner, ID: cp2.ID}))
			},
			func() error {
				return errOf(s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner, RunID: run}))
			},
		} {
			err := read()
			ce := wantAs[*store.CorruptError](t, err)
			wantErr(t, err, store.ErrCorrupt)
			wantErr(t, err, tc.target)
			if ce.ID != cp2.ID || ce.Table != "checkpoints" {
				t.Fatalf("%s: CorruptError = %+v", name, ce)
			}
		}
	}
	// The corrupt row is not overwritten: writing its step again is stale,
	// and the next step still fences on it.
	_, err := s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, "", 2)})
	wantAs[*store.StaleWriteError](t, err)
	cp3 := Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, "", 3), ParentID: cp2.ID}))(t)
	wantLatest(t, s, b, run, cp3.ID, 3)
	_, err = s.GetCheckpoint(b.ctx, &store.GetCheckpointParams{OwnerID: b.owner, ID: cp2.ID})
	wantErr(t, err, store.ErrCorrupt)
	Must(s.GetCheckpoint(b.ctx, &store.GetCheckpointParams{OwnerID: b.owner, ID: cp1.ID}))(t)
}
