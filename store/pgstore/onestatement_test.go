package pgstore_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
)

// TestOneStatementWrites: on PostgreSQL AppendMessages reserves the
// thread's sequence numbers and inserts its messages in one statement, and
// UpdateMessage is one conditional UPDATE; both keep the semantics of the
// store's other backend (storetest): numbering, the thread returned, an
// unknown or other owner's thread or message not found, metadata merged
// key by key (a nested object replaced, not merged), the expected status.
func TestOneStatementWrites(t *testing.T) {
	t.Parallel()
	f := newTxFixture(t, 0)
	ctx := t.Context()
	statements := func(trips [][]string) (n int) {
		for _, trip := range trips {
			for _, s := range trip {
				if s != "begin" && s != "commit" && !strings.Contains(s, "set_config(") {
					n++
				}
			}
		}
		return n
	}
	// Prepare the statements, then count.
	var th store.Thread
	append2 := func(tx store.Tx) ([]*store.Message, error) {
		p := &message.Message{Role: message.RoleAssistant, Agent: "a", Status: message.StatusQueued,
			Metadata: map[string]any{"c": map[string]any{"a": 1.0, "b": 2.0}, "keep": "yes"}}
		return tx.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: f.owner, ThreadID: f.thread.ID, Thread: &th,
			Messages: []store.NewMessage{{Message: message.User("one")}, {Message: *p}}})
	}
	var msgs []*store.Message
	for i := range 2 {
		f.tr.Take()
		if err := f.s.Tx(ctx, func(tx store.Tx) (err error) {
			msgs, err = append2(tx)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if trips := f.tr.Take(); i == 1 && statements(trips) != 1 {
			t.Errorf("AppendMessages: %q, want one statement", trips)
		}
	}
	if len(msgs) != 2 || msgs[0].Seq+1 != msgs[1].Seq || msgs[0].Text() != "one" || msgs[1].Status != message.StatusQueued ||
		msgs[1].Metadata["keep"] != "yes" {
		t.Fatalf("appended %+v", msgs)
	}
	if th.ID != f.thread.ID || th.OwnerID != f.owner {
		t.Fatalf("thread %+v", th)
	}
	list, err := f.s.ListMessages(ctx, &store.ListMessagesParams{OwnerID: f.owner, ThreadID: f.thread.ID})
	if err != nil || len(list) != 4 || list[3].ID != msgs[1].ID || list[3].Seq != 4 {
		t.Fatalf("listed %d messages (%v)", len(list), err)
	}
	// Another owner's thread: not found, nothing written.
	other := randName("other-")
	if _, err := f.s.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: other}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2} { // QueryRow, Query
		nm := []store.NewMessage{{Message: message.User("x")}, {Message: message.User("y")}}[:n]
		_, err := f.s.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: other, ThreadID: f.thread.ID, Messages: nm})
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("append %d to another owner's thread: %v, want ErrNotFound", n, err)
		}
	}

	// UpdateMessage: one statement; metadata key by key.
	up := &store.UpdateMessageParams{OwnerID: f.owner, ID: msgs[1].ID, Status: message.StatusStreaming,
		ExpectedStatus: message.StatusQueued, Metadata: map[string]any{"c": map[string]any{"a": 3.0}, "keep": nil, "new": "n"}}
	f.tr.Take()
	var got *store.Message
	if err := f.s.Tx(ctx, func(tx store.Tx) (err error) {
		got, err = tx.UpdateMessage(ctx, up)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if trips := f.tr.Take(); statements(trips) != 1 {
		t.Errorf("UpdateMessage: %q, want one statement", trips)
	}
	want := map[string]any{"c": map[string]any{"a": 3.0}, "new": "n"}
	if got.Status != message.StatusStreaming || !reflect.DeepEqual(got.Metadata, want) || got.Text() != "" || got.Seq != msgs[1].Seq {
		t.Fatalf("updated %+v, want metadata %v", got, want)
	}
	// Without metadata, parts or usage: they are kept.
	got, err = f.s.UpdateMessage(ctx, &store.UpdateMessageParams{OwnerID: f.owner, ID: msgs[1].ID, Status: message.StatusCompleted})
	if err != nil || got.Status != message.StatusCompleted || !reflect.DeepEqual(got.Metadata, want) {
		t.Fatalf("updated %+v (%v)", got, err)
	}
	// The expected status does not hold: a TransitionError from the status it has.
	_, err = f.s.UpdateMessage(ctx, &store.UpdateMessageParams{OwnerID: f.owner, ID: msgs[1].ID, Status: message.StatusError,
		ExpectedStatus: message.StatusStreaming})
	var te *store.TransitionError
	if !errors.As(err, &te) || te.From != string(message.StatusCompleted) || te.To != string(message.StatusError) {
		t.Fatalf("UpdateMessage expecting streaming: %v", err)
	}
	for _, exp := range []message.Status{"", message.StatusCompleted} {
		_, err = f.s.UpdateMessage(ctx, &store.UpdateMessageParams{OwnerID: other, ID: msgs[1].ID, Status: message.StatusError, ExpectedStatus: exp})
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("another owner's message (expected %q): %v, want ErrNotFound", exp, err)
		}
	}

	// CreateThread with its first messages: one statement, the messages
	// numbered from 1, the thread's next append after them.
	for i := range 2 {
		f.tr.Take()
		var created *store.Thread
		if err := f.s.Tx(ctx, func(tx store.Tx) (err error) {
			created, err = tx.CreateThread(ctx, &store.CreateThreadParams{OwnerID: f.owner, Name: "new", ActiveAgent: "a",
				Messages: []store.NewMessage{{Message: message.User("first")}, {Message: message.Message{Role: message.RoleAssistant, Agent: "a", Status: message.StatusStreaming}}}})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if trips := f.tr.Take(); i == 1 && statements(trips) != 1 {
			t.Errorf("CreateThread with messages: %q, want one statement", trips)
		}
		if created.Name != "new" || created.ActiveAgent != "a" || created.OwnerID != f.owner {
			t.Fatalf("created %+v", created)
		}
		more, err := f.s.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: f.owner, ThreadID: created.ID, Messages: []store.NewMessage{{Message: message.User("third")}}})
		if err != nil {
			t.Fatal(err)
		}
		all, err := f.s.ListMessages(ctx, &store.ListMessagesParams{OwnerID: f.owner, ThreadID: created.ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 3 || all[0].Seq != 1 || all[0].Text() != "first" || all[1].Seq != 2 || all[1].Status != message.StatusStreaming ||
			all[1].ThreadID != created.ID || more[0].Seq != 3 {
			t.Fatalf("messages of the created thread: %+v", all)
		}
	}
	// An owner that does not exist: not found, nothing created.
	_, err = f.s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: "missing-" + other, Messages: []store.NewMessage{{Message: message.User("x")}}})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("CreateThread of a missing owner: %v, want ErrNotFound", err)
	}
}

// TestLeaseWithRead: LatestCheckpoint with a Lease (a continuation's first
// delivery) is one round trip — the lease's upsert and the read in one
// batch, with synchronous_commit off for its implicit transaction — and no
// BEGIN or COMMIT; the setting does not outlive it.
func TestLeaseWithRead(t *testing.T) {
	t.Parallel()
	f := newTxFixture(t, 1)
	ctx := t.Context()
	st := &runstate.State{RunID: "run-lease", ThreadID: f.thread.ID, Network: "n", Fingerprint: "fp", Agent: "a", Step: 1,
		Status: runstate.StatusSuspended}
	if _, err := f.s.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: f.owner, State: st}); err != nil {
		t.Fatal(err)
	}
	f.tr.Take()
	if _, err := f.s.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: f.owner, RunID: st.RunID,
		Lease: &store.AcquireLeaseParams{Holder: "p1", TTL: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	trips := f.tr.Take()
	if len(trips) != 1 {
		t.Fatalf("%d round trips: %q", len(trips), trips)
	}
	joined := strings.Join(trips[0], "\n")
	if !strings.Contains(joined, "INSERT INTO run_leases") || !strings.Contains(joined, "FROM checkpoints") ||
		!strings.Contains(joined, "synchronous_commit") || slices.Contains(trips[0], "begin") || slices.Contains(trips[0], "commit") {
		t.Fatalf("round trips: %q", trips)
	}
	if l, err := f.s.GetLease(ctx, &store.GetLeaseParams{OwnerID: f.owner, RunID: st.RunID}); err != nil || l.Holder != "p1" {
		t.Fatalf("lease %+v, %v", l, err)
	}
	// One connection (MaxConns 1): the next statement runs on it.
	var sync string
	if err := f.s.Pool().QueryRow(ctx, `SHOW synchronous_commit`).Scan(&sync); err != nil || sync == "off" {
		t.Fatalf("synchronous_commit after the read: %q, %v", sync, err)
	}
}
