package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
)

// groupStore opens a store on a file with an owner and a thread.
func groupStore(t *testing.T) (*Store, string) {
	t.Helper()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "group.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.EnsureOwner(t.Context(), &store.EnsureOwnerParams{ID: "o"}); err != nil {
		t.Fatal(err)
	}
	th, err := s.CreateThread(t.Context(), &store.CreateThreadParams{OwnerID: "o"})
	if err != nil {
		t.Fatal(err)
	}
	return s, th.ID
}

func appendText(ctx context.Context, tx store.Tx, thread, text string) error {
	_, err := tx.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: "o", ThreadID: thread,
		Messages: []store.NewMessage{{Message: message.User(text)}}})
	return err
}

// queued waits until n Tx calls wait for the write turn.
func queued(t *testing.T, s *Store, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.group.mu.Lock()
		got := len(s.group.queue)
		s.group.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d Tx calls queued, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// holdTurn starts a Tx that holds the write turn until release is called,
// then appends text; its result comes on the channel.
func holdTurn(t *testing.T, s *Store, thread, text string) (release func(), result <-chan error) {
	t.Helper()
	hold, holding := make(chan struct{}), make(chan struct{})
	res := make(chan error, 1)
	go func() {
		res <- s.Tx(t.Context(), func(tx store.Tx) error {
			close(holding)
			<-hold
			return appendText(t.Context(), tx, thread, text)
		})
	}()
	<-holding
	return func() { close(hold) }, res
}

// texts returns the texts of the thread's messages in order, checking that
// their sequence numbers run from 1 without a gap.
func texts(t *testing.T, s *Store, thread string) map[string]bool {
	t.Helper()
	msgs, err := s.ListMessages(t.Context(), &store.ListMessagesParams{OwnerID: "o", ThreadID: thread})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for i, m := range msgs {
		if m.Seq != int64(i+1) {
			t.Fatalf("message %d has seq %d", i, m.Seq)
		}
		out[m.Text()] = true
	}
	return out
}

// TestGroupCommit: Txs queued behind one that holds the write turn commit
// in groups, each with its own outcome: the failed and the panicking leave
// nothing (not even a sequence number), the others all stay.
func TestGroupCommit(t *testing.T) {
	s, thread := groupStore(t)
	ctx := t.Context()
	const n = 40
	release, holder := holdTurn(t, s, thread, "holder")
	boom := errors.New("boom")
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					errs[i] = fmt.Errorf("panic: %v", r)
				}
			}()
			errs[i] = s.Tx(ctx, func(tx store.Tx) error {
				if err := appendText(ctx, tx, thread, fmt.Sprint(i)); err != nil {
					return err
				}
				switch i % 5 {
				case 1:
					return boom
				case 2:
					panic("fn panics")
				}
				return nil
			})
		})
	}
	queued(t, s, n)
	release()
	wg.Wait()
	if err := <-holder; err != nil {
		t.Fatal(err)
	}
	got := texts(t, s, thread)
	for i, err := range errs {
		switch i % 5 {
		case 1:
			if !errors.Is(err, boom) {
				t.Errorf("Tx %d: %v, want boom", i, err)
			}
		case 2:
			if err == nil || err.Error() != "panic: fn panics" {
				t.Errorf("Tx %d: %v, want its panic", i, err)
			}
		default:
			if err != nil {
				t.Errorf("Tx %d: %v", i, err)
			}
		}
		if want := i%5 != 1 && i%5 != 2; got[fmt.Sprint(i)] != want {
			t.Errorf("Tx %d: message stored %v, want %v", i, got[fmt.Sprint(i)], want)
		}
	}
	if !got["holder"] || len(got) != 1+n*3/5 {
		t.Fatalf("%d messages stored, want %d", len(got), 1+n*3/5)
	}
	s.group.mu.Lock()
	st := s.group.stats
	s.group.mu.Unlock()
	// 41 Txs, at most maxGroup to a commit.
	if st.members != n+1 || st.commits < (n+1+maxGroup-1)/maxGroup || st.commits > 10 {
		t.Fatalf("%d Txs in %d commits: not grouped", st.members, st.commits)
	}
	// Alone, a Tx commits at once.
	if err := s.Tx(ctx, func(tx store.Tx) error { return appendText(ctx, tx, thread, "alone") }); err != nil {
		t.Fatal(err)
	}
	if !texts(t, s, thread)["alone"] {
		t.Fatal("lone Tx not committed")
	}
}

// TestGroupCommitCancelledWaiter: a Tx whose context ends while it waits
// for the turn returns the context's error, writes nothing and leaves the
// turn to the others.
func TestGroupCommitCancelledWaiter(t *testing.T) {
	s, thread := groupStore(t)
	ctx := t.Context()
	release, holder := holdTurn(t, s, thread, "holder")
	cctx, cancel := context.WithCancel(ctx)
	cancelled := make(chan error, 1)
	go func() {
		cancelled <- s.Tx(cctx, func(tx store.Tx) error { return appendText(ctx, tx, thread, "cancelled") })
	}()
	queued(t, s, 1)
	after := make(chan error, 1)
	go func() {
		after <- s.Tx(ctx, func(tx store.Tx) error { return appendText(ctx, tx, thread, "after") })
	}()
	queued(t, s, 2)
	cancel()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Tx: %v", err)
	}
	release()
	if err := <-holder; err != nil {
		t.Fatal(err)
	}
	if err := <-after; err != nil {
		t.Fatal(err)
	}
	if got := texts(t, s, thread); !got["holder"] || !got["after"] || got["cancelled"] || len(got) != 2 {
		t.Fatalf("messages %v", got)
	}
}

// TestGroupCommitLost: when a Tx of a group ends the SQLite transaction
// (here by a ROLLBACK through the driver transaction; in life an I/O error
// or a full disk), every Tx of the group fails, none of their writes stay,
// and the next Tx works.
func TestGroupCommitLost(t *testing.T) {
	s, thread := groupStore(t)
	ctx := t.Context()
	release, first := holdTurn(t, s, thread, "first")
	breaker := make(chan error, 1)
	go func() {
		breaker <- s.Tx(ctx, func(tx store.Tx) error {
			if err := appendText(ctx, tx, thread, "breaker"); err != nil {
				return err
			}
			sqlTx, _ := SQLTx(tx)
			_, err := sqlTx.ExecContext(ctx, "ROLLBACK")
			return err
		})
	}()
	queued(t, s, 1)
	release()
	for name, ch := range map[string]<-chan error{"first": first, "breaker": breaker} {
		if err := <-ch; !errors.Is(err, errGroupLost) {
			t.Errorf("%s: %v, want the group's loss", name, err)
		}
	}
	if got := texts(t, s, thread); len(got) != 0 {
		t.Fatalf("messages of a lost group stored: %v", got)
	}
	if err := s.Tx(ctx, func(tx store.Tx) error { return appendText(ctx, tx, thread, "next") }); err != nil {
		t.Fatal(err)
	}
	if got := texts(t, s, thread); !got["next"] || len(got) != 1 {
		t.Fatalf("messages %v", got)
	}
}

// stepState is a run's state at step on thread.
func stepState(run, thread string, step int) *runstate.State {
	return &runstate.State{RunID: run, ThreadID: thread, Network: "n", Fingerprint: "fp", Agent: "a",
		Messages: []message.Message{message.User("hi")}, Step: step, Status: runstate.StatusRunning,
		StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// saveStep saves run's checkpoint at step deferred, fenced on parent, in
// tx, and reports whether the transaction has begun after it.
func saveStep(ctx context.Context, tx store.Tx, thread, run string, step int, parent string) (*store.Checkpoint, bool, error) {
	cp, err := tx.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: "o", State: stepState(run, thread, step), ParentID: parent, Deferred: true})
	return cp, tx.(*txOps).tx.begun, err
}

// runStore is groupStore with run's first checkpoint, at step 1.
func runStore(t *testing.T, run string) (*Store, string, *store.Checkpoint) {
	t.Helper()
	s, thread := groupStore(t)
	first, err := s.SaveCheckpoint(t.Context(), &store.SaveCheckpointParams{OwnerID: "o", State: stepState(run, thread, 1)})
	if err != nil {
		t.Fatal(err)
	}
	return s, thread, first
}

// wantLatest checks run's newest checkpoint.
func wantLatest(t *testing.T, s *Store, run, id string, step int) {
	t.Helper()
	got, err := s.LatestCheckpoint(t.Context(), &store.LatestCheckpointParams{OwnerID: "o", RunID: run})
	if err != nil || got.ID != id || got.Step != step {
		t.Fatalf("latest checkpoint of %s = %+v, %v; want %s at step %d", run, got, err, id, step)
	}
}

// TestGroupCommitHeldWrite: a Tx whose only write is a deferred checkpoint
// on its parent holds it without beginning, and runs it on its own at the
// commit; a stale one fails the Tx with the write's *StaleWriteError and
// leaves nothing.
func TestGroupCommitHeldWrite(t *testing.T) {
	run := "run-held"
	s, thread, first := runStore(t, run)
	ctx := t.Context()
	var cp *store.Checkpoint
	var err error
	if err := s.Tx(ctx, func(tx store.Tx) error {
		var begun bool
		cp, begun, err = saveStep(ctx, tx, thread, run, 2, first.ID)
		if begun {
			t.Error("the transaction began for a held write")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	wantLatest(t, s, run, cp.ID, 2)
	got, err := s.GetCheckpoint(ctx, &store.GetCheckpointParams{OwnerID: "o", ID: cp.ID})
	if err != nil || got.ParentID != first.ID || !got.CreatedAt.Equal(cp.CreatedAt) {
		t.Fatalf("stored %+v, %v; returned %+v", got, err, cp)
	}
	// Stale: fenced on the first checkpoint, which is no longer the newest.
	err = s.Tx(ctx, func(tx store.Tx) error {
		_, _, err := saveStep(ctx, tx, thread, run, 3, first.ID)
		return err
	})
	var stale *store.StaleWriteError
	if !errors.As(err, &stale) || stale.LatestID != cp.ID || stale.LatestStep != 2 {
		t.Fatalf("stale held write: %v, want a *StaleWriteError naming %s", err, cp.ID)
	}
	wantLatest(t, s, run, cp.ID, 2)
	// A Tx that writes nothing needs no transaction.
	if err := s.Tx(ctx, func(store.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

// TestGroupCommitHeldWriteJoined: when a Tx waits for the turn, the held
// write of the group's first Tx goes before it joins: both commit in one
// group; a stale held write fails the first Tx alone, and the one that
// waited commits its own write.
func TestGroupCommitHeldWriteJoined(t *testing.T) {
	run := "run-joined"
	s, thread, parent := runStore(t, run)
	ctx := t.Context()
	for i, fence := range []string{"", "stale"} {
		step := 2 + i
		if fence == "" {
			fence = parent.ID
		}
		holding, hold := make(chan struct{}), make(chan struct{})
		var held *store.Checkpoint
		first := make(chan error, 1)
		go func() {
			first <- s.Tx(ctx, func(tx store.Tx) error {
				cp, begun, err := saveStep(ctx, tx, thread, run, step, fence)
				held = cp
				if begun {
					t.Error("the transaction began for a held write")
				}
				close(holding)
				<-hold
				return err
			})
		}()
		<-holding
		text := fmt.Sprint("joined ", step)
		joined := make(chan error, 1)
		go func() { joined <- s.Tx(ctx, func(tx store.Tx) error { return appendText(ctx, tx, thread, text) }) }()
		queued(t, s, 1)
		s.group.mu.Lock()
		before := s.group.stats
		s.group.mu.Unlock()
		close(hold)
		err1, err2 := <-first, <-joined
		if err2 != nil || !texts(t, s, thread)[text] {
			t.Fatalf("step %d: the joined Tx: %v (its message stored: %v)", step, err2, texts(t, s, thread)[text])
		}
		s.group.mu.Lock()
		after := s.group.stats
		s.group.mu.Unlock()
		if fence == "stale" {
			var stale *store.StaleWriteError
			if !errors.As(err1, &stale) || stale.LatestID != parent.ID {
				t.Fatalf("stale held write: %v, want a *StaleWriteError naming %s", err1, parent.ID)
			}
			wantLatest(t, s, run, parent.ID, parent.Step)
			continue
		}
		if err1 != nil {
			t.Fatal(err1)
		}
		wantLatest(t, s, run, held.ID, step)
		if after.commits != before.commits+1 || after.members != before.members+2 {
			t.Fatalf("commits %d → %d, members %d → %d: want both Txs in one commit", before.commits, after.commits, before.members, after.members)
		}
		parent = held
	}
}
