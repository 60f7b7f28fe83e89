package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/transfer"
)

// newState returns a valid state of run at step with rich content.
func newState(runID, threadID string, step int) *runstate.State {
	return &runstate.State{
		RunID: runID, ThreadID: threadID, Network: "support", Fingerprint: "fp-1", Agent: "billing",
		Messages:   []message.Message{message.User("refund ☂"), message.Assistant("billing", "sure")},
		Transcript: []message.Message{message.User("refund ☂")},
		Pending: []runstate.PendingCall{{
			Call: message.ToolCall{ID: "c1", Name: "refund", Arguments: json.RawMessage(`{"amount":10}`)},
			Kind: runstate.CallTool, Result: &runstate.Result{Output: "ok"},
		}},
		Transfer: &transfer.Context{ID: "h1", From: "triage", To: "billing", Type: transfer.TypeTransfer, History: transfer.HistoryFull,
			Data: json.RawMessage(`{"reason":"refund"}`)},
		Trail: []string{"triage", "billing"}, Turns: step + 1, Transfers: 1,
		Usage:     message.Usage{InputTokens: 100, OutputTokens: 20},
		Step:      step,
		Status:    runstate.StatusRunning,
		StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC),
		Values:    map[string]json.RawMessage{"k": json.RawMessage(`"v"`)},
	}
}

func encodeState(t *testing.T, s *runstate.State) []byte {
	t.Helper()
	return Must(runstate.Encode(s))(t)
}

func testCheckpointSaveLoad(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	run := "run-" + uuid.NewString()
	st := newState(run, th.ID, 1)
	cp := Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: st}))(t)
	if cp.ID == "" || cp.RunID != run || cp.ThreadID != th.ID || cp.Step != 1 || cp.ParentID != "" ||
		cp.Fingerprint != "fp-1" || cp.Status != runstate.StatusRunning || cp.OwnerID != b.owner {
		t.Fatalf("SaveCheckpoint = %+v", cp)
	}
	checkTime(t, "CreatedAt", cp.CreatedAt)
	st2 := newState(run, th.ID, 2)
	st2.Status = runstate.StatusInterrupted
	st2.Interrupt = &runstate.Interrupt{SchemaVersion: 1, ID: "i1", Source: "approval",
		ActionRequests: []runstate.ActionRequest{{Name: "refund", Args: json.RawMessage(`{"amount":10}`), CallID: "c1"}}}
	cp2 := Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: st2, ParentID: cp.ID, ID: "cp-" + uuid.NewString()}))(t)
	if cp2.ParentID != cp.ID || cp2.Status != runstate.StatusInterrupted {
		t.Fatalf("second checkpoint = %+v", cp2)
	}
	for name, got := range map[string]*store.Checkpoint{
		"GetCheckpoint":            Must(s.GetCheckpoint(b.ctx, &store.GetCheckpointParams{OwnerID: b.owner, ID: cp2.ID, Fingerprint: "fp-1"}))(t),
		"LatestCheckpoint(run)":    Must(s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner, RunID: run}))(t),
		"LatestCheckpoint(thread)": Must(s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner, ThreadID: th.ID}))(t),
	} {
		if !reflect.DeepEqual(got, cp2) {
			t.Fatalf("%s = %+v\nwant %+v", name, got, cp2)
		}
		if string(encodeState(t, got.State)) != string(encodeState(t, st2)) {
			t.Fatalf("%s: state does not round-trip", name)
		}
	}
	first := Must(s.GetCheckpoint(b.ctx, &store.GetCheckpointParams{OwnerID: b.owner, ID: cp.ID}))(t)
	if first.Step != 1 || first.State.Step != 1 {
		t.Fatalf("first checkpoint = %+v", first)
	}
	// Another run on the same thread is the thread's latest once written.
	other := Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState("run-"+uuid.NewString(), th.ID, 0)}))(t)
	if got := Must(s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner, ThreadID: th.ID}))(t); got.ID != other.ID {
		t.Fatalf("thread latest = %s, want %s", got.ID, other.ID)
	}
	// A run without a thread.
	loose := Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState("run-"+uuid.NewString(), "", 0)}))(t)
	if loose.ThreadID != "" {
		t.Fatalf("ThreadID = %q", loose.ThreadID)
	}
	_, err := s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner, RunID: "missing"})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.GetCheckpoint(b.ctx, &store.GetCheckpointParams{OwnerID: b.owner, ID: "missing"})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner})
	wantErr(t, err, store.ErrInvalid)
	_, err = s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner, RunID: run, ThreadID: th.ID})
	wantErr(t, err, store.ErrInvalid)
}

// wantLatest fails unless the run's newest checkpoint is id.
func wantLatest(t *testing.T, s store.Store, b *bundle, run, id string, step int) {
	t.Helper()
	got := Must(s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner, RunID: run}))(t)
	if got.ID != id || got.Step != step || got.State.Step != step {
		t.Fatalf("latest checkpoint = %s step %d, want %s step %d", got.ID, got.Step, id, step)
	}
}

func testCheckpointFencingStep(t *testing.T, s store.Store, b *bundle) {
	run := "run-" + uuid.NewString()
	cp1 := Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, "", 1)}))(t)
	cp2 := Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, "", 2)}))(t)
	if cp2.ParentID != cp1.ID {
		t.Fatalf("implicit parent = %q, want %q", cp2.ParentID, cp1.ID)
	}
	for _, step := range []int{2, 1, 0} {
		stale := newState(run, "", step)
		stale.FinalOutput = "from a stale writer"
		_, err := s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: stale})
		se := wantAs[*store.StaleWriteError](t, err)
		wantErr(t, err, store.ErrConflict)
		if se.RunID != run || se.Step != step || se.LatestID != cp2.ID || se.LatestStep != 2 {
			t.Fatalf("StaleWriteError = %+v", se)
		}
	}
	wantLatest(t, s, b, run, cp2.ID, 2)
	got := Must(s.GetCheckpoint(b.ctx, &store.GetCheckpointParams{OwnerID: b.owner, ID: cp2.ID}))(t)
	if got.State.FinalOutput != "" {
		t.Fatalf("a stale write overwrote the checkpoint")
	}
	// Steps may skip ahead.
	cp5 := Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, "", 5)}))(t)
	wantLatest(t, s, b, run, cp5.ID, 5)
	// The same checkpoint ID twice is a conflict.
	_, err := s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, ID: cp5.ID, State: newState("run-"+uuid.NewString(), "", 1)})
	wantErr(t, err, store.ErrConflict)
	// Runs of another owner are fenced apart.
	Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.other, State: newState(run, "", 1)}))(t)
	wantLatest(t, s, b, run, cp5.ID, 5)
}

func testCheckpointFencingParent(t *testing.T, s store.Store, b *bundle) {
	run := "run-" + uuid.NewString()
	// A writer that believes the run has a parent it does not have is stale.
	_, err := s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, "", 1), ParentID: "ghost"})
	wantAs[*store.StaleWriteError](t, err)
	cp1 := Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, "", 1)}))(t)
	cp2 := Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, "", 2), ParentID: cp1.ID}))(t)
	// Resumed from cp1 while another writer already wrote cp2: even a
	// higher step is refused.
	_, err = s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, "", 3), ParentID: cp1.ID})
	se := wantAs[*store.StaleWriteError](t, err)
	if se.ParentID != cp1.ID || se.LatestID != cp2.ID {
		t.Fatalf("StaleWriteError = %+v", se)
	}
	wantLatest(t, s, b, run, cp2.ID, 2)
	cp3 := Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, "", 3), ParentID: cp2.ID}))(t)
	wantLatest(t, s, b, run, cp3.ID, 3)
	// What the write returned is what is read back (SQLite reads nothing
	// back when the parent is given).
	got := Must(s.GetCheckpoint(b.ctx, &store.GetCheckpointParams{OwnerID: b.owner, ID: cp3.ID}))(t)
	if got.ParentID != cp3.ParentID || !got.CreatedAt.Equal(cp3.CreatedAt) || got.CreatedAt.Location() != cp3.CreatedAt.Location() {
		t.Fatalf("read back parent %q at %v, written %q at %v", got.ParentID, got.CreatedAt, cp3.ParentID, cp3.CreatedAt)
	}
}

// testCheckpointMessages: messages saved with a checkpoint are appended
// after the thread's, with the thread as the append left it, and only if
// the checkpoint is written.
func testCheckpointMessages(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	Must(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: message.User("first")}}}))(t)
	run := "run-" + uuid.NewString()
	msgs := func(texts ...string) []store.NewMessage {
		var out []store.NewMessage
		for _, x := range texts {
			m := message.Assistant("a", x)
			m.Metadata = map[string]any{"k": x}
			out = append(out, store.NewMessage{Message: m})
		}
		return out
	}
	for n := 1; n <= 3; n++ {
		var got store.Thread
		var texts []string
		for i := range n {
			texts = append(texts, fmt.Sprintf("step %d, message %d", n, i))
		}
		in := msgs(texts...)
		in[0].Message.ID = fmt.Sprintf("%s-m%d", run, n)
		cp := Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, th.ID, n),
			Messages: in, Thread: &got}))(t)
		if cp.Step != n || got.ID != th.ID || got.OwnerID != b.owner || got.Name != "thread" {
			t.Fatalf("step %d: checkpoint %+v, thread %+v", n, cp, got)
		}
		if n == 1 && !got.UpdatedAt.After(th.UpdatedAt) && !got.UpdatedAt.Equal(th.UpdatedAt) {
			t.Fatalf("thread updated at %v, before %v", got.UpdatedAt, th.UpdatedAt)
		}
	}
	// Without Thread, and none for a checkpoint without messages.
	Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, th.ID, 4), Messages: msgs("four")}))(t)
	Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, th.ID, 5), Thread: new(store.Thread)}))(t)
	want := []string{"first", "step 1, message 0", "step 2, message 0", "step 2, message 1",
		"step 3, message 0", "step 3, message 1", "step 3, message 2", "four"}
	checkTexts := func() {
		t.Helper()
		list := Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: th.ID}))(t)
		if len(list) != len(want) {
			t.Fatalf("%d messages, want %d", len(list), len(want))
		}
		for i, m := range list {
			if m.Seq != int64(i+1) || m.Text() != want[i] || m.ThreadID != th.ID {
				t.Fatalf("message %d: seq %d %q, want %d %q", i, m.Seq, m.Text(), i+1, want[i])
			}
			if i > 0 && m.Metadata["k"] != want[i] {
				t.Fatalf("message %d: metadata %v", i, m.Metadata)
			}
		}
	}
	checkTexts()
	m := Must(s.GetMessage(b.ctx, &store.GetMessageParams{OwnerID: b.owner, ID: run + "-m2"}))(t)
	if m.Seq != 3 || m.Role != message.RoleAssistant || m.Agent != "a" || m.Status != message.StatusCompleted {
		t.Fatalf("message with its id: %+v", m)
	}
	// A stale checkpoint writes none of its messages.
	_, err := s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, th.ID, 2), Messages: msgs("stale")})
	wantAs[*store.StaleWriteError](t, err)
	_, err = s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, th.ID, 9), ParentID: "ghost", Messages: msgs("stale")})
	wantAs[*store.StaleWriteError](t, err)
	checkTexts()
	// Another owner's thread, a missing one: not found, nothing written.
	other := "run-" + uuid.NewString()
	_, err = s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.other, State: newState(other, th.ID, 1), Messages: msgs("theirs")})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(other, "missing-"+uuid.NewString(), 1), Messages: msgs("lost")})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner, RunID: other})
	wantErr(t, err, store.ErrNotFound)
	checkTexts()
	// Messages need the state's thread; a bad message is invalid.
	_, err = s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(other, "", 1), Messages: msgs("no thread")})
	wantErr(t, err, store.ErrInvalid)
	bad := msgs("bad")
	bad[0].Message.Role = "robot"
	_, err = s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(other, th.ID, 1), Messages: bad})
	wantErr(t, err, store.ErrInvalid)
	checkTexts()
	// In a transaction that rolls back, neither stays.
	boom := errors.New("boom")
	err = s.Tx(b.ctx, func(tx store.Tx) error {
		if _, err := tx.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, th.ID, 10), Messages: msgs("rolled back")}); err != nil {
			return err
		}
		return boom
	})
	wantErr(t, err, boom)
	if got := Must(s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner, RunID: run}))(t); got.Step != 5 {
		t.Fatalf("latest step %d after a rollback, want 5", got.Step)
	}
	checkTexts()
}
