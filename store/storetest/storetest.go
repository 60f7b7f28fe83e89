// Package storetest is the conformance suite of [store.Store]: every backend
// runs [Run] against a real database.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/store"
)

// Option configures [Run].
type Option func(*config)

type config struct {
	corrupt func(ctx context.Context, s store.Store, checkpointID string, state []byte) error
	sql     *SQL
}

// WithCorruptCheckpoint gives the suite a way to overwrite the stored state
// bytes of a checkpoint behind the store's back, to test that a corrupt row
// is reported as such. Without it that test is skipped.
func WithCorruptCheckpoint(fn func(ctx context.Context, s store.Store, checkpointID string, state []byte) error) Option {
	return func(c *config) { c.corrupt = fn }
}

// Run runs the suite. newStore returns the store under test; it is called
// once per subtest and may return the same store each time, since every
// subtest works with owners of its own. It should register any cleanup with
// t.Cleanup. Subtests run in parallel.
func Run(t *testing.T, newStore func(t *testing.T) store.Store, opts ...Option) {
	t.Helper()
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s store.Store, b *bundle)
	}{
		{"Owners", testOwners},
		{"APIKeys", testAPIKeys},
		{"APIKeyScopes", testAPIKeyScopes},
		{"Audit", testAudit},
		{"WebhookDeliveries", testWebhookDeliveries},
		{"PushConfigs", testPushConfigs},
		{"WebhookRetention", testWebhookRetention},
		{"ThreadListNetworks", testThreadListNetworks},
		{"ThreadCreateGet", testThreadCreateGet},
		{"ThreadParent", testThreadParent},
		{"ThreadWithMessages", testThreadWithMessages},
		{"ThreadList", testThreadList},
		{"ThreadMetadataMerge", testThreadMetadataMerge},
		{"ThreadMetadataCAS", testThreadMetadataCAS},
		{"ThreadMetadataConcurrentCAS", testThreadMetadataConcurrentCAS},
		{"ThreadActiveAgent", testThreadActiveAgent},
		{"Forks", func(t *testing.T, s store.Store, b *bundle) { testForks(t, s, b, cfg.sql) }},
		{"MessagesAppendList", testMessagesAppendList},
		{"MessagesAppendAtomic", testMessagesAppendAtomic},
		{"MessagesConcurrentAppend", testMessagesConcurrentAppend},
		{"MessagesUpdate", testMessagesUpdate},
		{"MessagesUpdateAwaitsWriter", testMessagesUpdateAwaitsWriter},
		{"Drafts", testDrafts},
		{"CheckpointSaveLoad", testCheckpointSaveLoad},
		{"CheckpointFencingStep", testCheckpointFencingStep},
		{"CheckpointFencingParent", testCheckpointFencingParent},
		{"CheckpointMessages", testCheckpointMessages},
		{"CheckpointNewThread", testCheckpointNewThread},
		{"CheckpointNewThreadDeferred", testCheckpointNewThreadDeferred},
		{"CheckpointDeferred", testCheckpointDeferred},
		{"CheckpointConcurrentWriters", testCheckpointConcurrentWriters},
		{"CheckpointIncompatible", testCheckpointIncompatible},
		{"CheckpointInvalid", testCheckpointInvalid},
		{"CheckpointCorrupt", func(t *testing.T, s store.Store, b *bundle) { testCheckpointCorrupt(t, s, b, cfg.corrupt) }},
		{"JobRunIdempotency", testJobRunIdempotency},
		{"JobRunConcurrentCreate", testJobRunConcurrentCreate},
		{"JobRunTransitions", testJobRunTransitions},
		{"JobRunFenceZero", testJobRunFenceZero},
		{"JobRunHold", testJobRunHold},
		{"JobRunViaProcessing", testJobRunViaProcessing},
		{"JobRunDeferred", testJobRunDeferred},
		{"JobRunClearDraft", testJobRunClearDraft},
		{"JobRunAppend", testJobRunAppend},
		{"JobRunCreateDeferred", testJobRunCreateDeferred},
		{"ThreadSummaries", testThreadSummaries},
		{"MemoryDocumentCAS", testMemoryDocumentCAS},
		{"MemoryDocumentConcurrentCAS", testMemoryDocumentConcurrentCAS},
		{"Leases", testLeases},
		{"Interrupts", testInterrupts},
		{"CallRecords", testCallRecords},
		{"InterruptConflictsInTx", testInterruptConflictsInTx},
		{"InterruptConcurrent", testInterruptConcurrent},
		{"LeaseSweep", testLeaseSweep},
		{"TxCommit", testTxCommit},
		{"TxRollback", testTxRollback},
		{"TxPanic", testTxPanic},
		{"OwnerIsolation", testOwnerIsolation},
		{"InvalidParams", testInvalidParams},
		{"HostileText", testHostileText},
		{"HostileJSON", testHostileJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			tc.fn(t, s, setup(t, s))
		})
	}
}

// bundle is what every test starts with: two owners.
type bundle struct {
	ctx   context.Context
	owner string // the owner under test
	other string // another owner, who must see nothing of owner's
}

func setup(t *testing.T, s store.Store) *bundle {
	t.Helper()
	b := &bundle{ctx: t.Context(), owner: "owner-" + uuid.NewString(), other: "other-" + uuid.NewString()}
	for _, id := range []string{b.owner, b.other} {
		if _, err := s.EnsureOwner(b.ctx, &store.EnsureOwnerParams{ID: id, Name: "name of " + id}); err != nil {
			t.Fatalf("EnsureOwner(%s): %v", id, err)
		}
	}
	return b
}

// DriverTx checks that rows written through the driver's transaction under
// a store transaction, as River's InsertTx writes them, commit and roll
// back with the store's rows. insert writes, through tx's driver
// transaction, a row naming thread; count counts those rows, outside any
// transaction. The store is s with owner "o".
func DriverTx(t *testing.T, s store.Store, insert func(ctx context.Context, tx store.Tx, thread string) error, count func(ctx context.Context, thread string) (int, error)) {
	t.Helper()
	ctx := t.Context()
	Must(s.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: "o"}))(t)
	boom := errors.New("boom")
	for _, fail := range []bool{true, false} {
		var threadID string
		err := s.Tx(ctx, func(tx store.Tx) error {
			th, err := tx.CreateThread(ctx, &store.CreateThreadParams{OwnerID: "o"})
			if err != nil {
				return err
			}
			threadID = th.ID
			if err := insert(ctx, tx, th.ID); err != nil {
				return err
			}
			if fail {
				return boom
			}
			return nil
		})
		jobs := Must(count(ctx, threadID))(t)
		_, getErr := s.GetThread(ctx, &store.GetThreadParams{OwnerID: "o", ID: threadID})
		if fail {
			if !errors.Is(err, boom) || jobs != 0 || !errors.Is(getErr, store.ErrNotFound) {
				t.Fatalf("rolled back: err %v, jobs %d, thread %v", err, jobs, getErr)
			}
		} else if err != nil || jobs != 1 || getErr != nil {
			t.Fatalf("committed: err %v, jobs %d, thread %v", err, jobs, getErr)
		}
	}
}

// race calls fn(0) … fn(n-1) at once and returns their errors.
func race(n int, fn func(i int) error) []error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = fn(i) })
	}
	wg.Wait()
	return errs
}

// oneWinner returns the index of the one nil error of errs, the others
// being conflicts (store.ErrConflict); it fails t otherwise.
func oneWinner(t *testing.T, errs []error) int {
	t.Helper()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("%d and %d of %d concurrent writers both won", winner, i, len(errs))
		case err == nil:
			winner = i
		case !errors.Is(err, store.ErrConflict):
			t.Fatalf("concurrent writer %d: %v, want a conflict", i, err)
		}
	}
	if winner < 0 {
		t.Fatalf("none of %d concurrent writers won: %v", len(errs), errs)
	}
	return winner
}

// countTrue returns how many of bs are true.
func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// errOf returns the error of a call, dropping its value.
func errOf[T any](_ T, err error) error { return err }

// Must returns v, failing t on err: Must(s.Call(ctx, p))(t).
func Must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return v
	}
}

// wantErr fails the test unless errors.Is(err, target).
func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
}

func wantAs[E error](t *testing.T, err error) E {
	t.Helper()
	var e E
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want a %T", err, err, e)
	}
	return e
}

func newThread(t *testing.T, s store.Ops, b *bundle) *store.Thread {
	t.Helper()
	return Must(s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: b.owner, Name: "thread", Network: "net"}))(t)
}

// checkTime fails unless ts is a recent UTC time with microsecond precision.
func checkTime(t *testing.T, what string, ts time.Time) {
	t.Helper()
	if ts.IsZero() {
		t.Fatalf("%s is zero", what)
	}
	if ts.Location() != time.UTC {
		t.Errorf("%s = %v, want UTC", what, ts)
	}
	if ts.Nanosecond()%1000 != 0 {
		t.Errorf("%s = %v, want microsecond precision", what, ts)
	}
	if d := time.Since(ts); d < -time.Minute || d > time.Hour {
		t.Errorf("%s = %v, not recent", what, ts)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// checkPages checks the paging of a list of the owner's three rows, newest
// first, whose oldest is last: two rows a page, the first page has two and
// a cursor, the second the last row alone and no cursor; and that another
// owner lists none. list lists a page of an owner's rows of at most limit
// (0 the default) after cursor; id names a row.
func checkPages[T any](t *testing.T, b *bundle, last string, list func(owner string, limit int, cursor string) ([]T, string), id func(T) string) {
	t.Helper()
	ids := func(rows []T) []string {
		var s []string
		for _, r := range rows {
			s = append(s, id(r))
		}
		return s
	}
	p1, next1 := list(b.owner, 2, "")
	p2, next2 := list(b.owner, 2, next1)
	if len(p1) != 2 || next1 == "" || len(p2) != 1 || next2 != "" || id(p2[0]) != last {
		t.Fatalf("pages %v (%q), %v (%q)", ids(p1), next1, ids(p2), next2)
	}
	if rows, _ := list(b.other, 0, ""); len(rows) != 0 {
		t.Fatalf("another owner lists %d rows", len(rows))
	}
}
