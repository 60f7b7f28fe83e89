// Package storetest is the conformance suite of [store.Store]: every backend
// runs [Run] against a real database.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/transfer"
)

// Option configures [Run].
type Option func(*config)

type config struct {
	corrupt func(ctx context.Context, s store.Store, checkpointID string, state []byte) error
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
		{"ThreadCreateGet", testThreadCreateGet},
		{"ThreadParent", testThreadParent},
		{"ThreadWithMessages", testThreadWithMessages},
		{"ThreadList", testThreadList},
		{"ThreadMetadataMerge", testThreadMetadataMerge},
		{"ThreadMetadataCAS", testThreadMetadataCAS},
		{"ThreadMetadataConcurrentCAS", testThreadMetadataConcurrentCAS},
		{"ThreadActiveAgent", testThreadActiveAgent},
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

func testOwners(t *testing.T, s store.Store, b *bundle) {
	o := Must(s.GetOwner(b.ctx, &store.GetOwnerParams{ID: b.owner}))(t)
	if o.ID != b.owner || o.Name != "name of "+b.owner {
		t.Fatalf("GetOwner = %+v", o)
	}
	checkTime(t, "CreatedAt", o.CreatedAt)
	again := Must(s.EnsureOwner(b.ctx, &store.EnsureOwnerParams{ID: b.owner, Name: "renamed"}))(t)
	if *again != *o {
		t.Fatalf("EnsureOwner of an existing owner = %+v, want it unchanged %+v", again, o)
	}
	_, err := s.GetOwner(b.ctx, &store.GetOwnerParams{ID: "missing-" + uuid.NewString()})
	wantErr(t, err, store.ErrNotFound)
}

func testAPIKeys(t *testing.T, s store.Store, b *bundle) {
	created := Must(s.CreateAPIKey(b.ctx, &store.CreateAPIKeyParams{OwnerID: b.owner, Name: "ci"}))(t)
	k := created.Key
	if created.Secret == "" || k.Hash != store.HashAPIKey(created.Secret) || k.Prefix != store.APIKeyPrefix(created.Secret) {
		t.Fatalf("CreateAPIKey = %+v, secret %q", k, created.Secret)
	}
	if k.OwnerID != b.owner || k.Name != "ci" || !k.RevokedAt.IsZero() {
		t.Fatalf("CreateAPIKey = %+v", k)
	}
	checkTime(t, "CreatedAt", k.CreatedAt)
	if len(k.Hash) != 64 || k.Hash == created.Secret {
		t.Fatalf("Hash %q is not a hex SHA-256", k.Hash)
	}

	got := Must(s.LookupAPIKey(b.ctx, &store.LookupAPIKeyParams{Hash: store.HashAPIKey(created.Secret)}))(t)
	if !reflect.DeepEqual(got, k) {
		t.Fatalf("LookupAPIKey = %+v, want %+v", got, k)
	}
	_, err := s.LookupAPIKey(b.ctx, &store.LookupAPIKeyParams{Hash: store.HashAPIKey("wrong")})
	wantErr(t, err, store.ErrNotFound)

	fixed := Must(s.CreateAPIKey(b.ctx, &store.CreateAPIKeyParams{OwnerID: b.owner, Name: "fixed", Secret: "baton_fixed-" + uuid.NewString()}))(t)
	if fixed.Key.Hash != store.HashAPIKey(fixed.Secret) {
		t.Fatalf("given secret not used")
	}
	_, err = s.CreateAPIKey(b.ctx, &store.CreateAPIKeyParams{OwnerID: b.owner, Secret: fixed.Secret})
	wantErr(t, err, store.ErrConflict)

	revoked := Must(s.RevokeAPIKey(b.ctx, &store.RevokeAPIKeyParams{OwnerID: b.owner, ID: k.ID}))(t)
	checkTime(t, "RevokedAt", revoked.RevokedAt)
	_, err = s.LookupAPIKey(b.ctx, &store.LookupAPIKeyParams{Hash: k.Hash})
	wantErr(t, err, store.ErrNotFound)
	again := Must(s.RevokeAPIKey(b.ctx, &store.RevokeAPIKeyParams{OwnerID: b.owner, ID: k.ID}))(t)
	if !again.RevokedAt.Equal(revoked.RevokedAt) {
		t.Fatalf("revoking twice moved RevokedAt: %v then %v", revoked.RevokedAt, again.RevokedAt)
	}

	keys := Must(s.ListAPIKeys(b.ctx, &store.ListAPIKeysParams{OwnerID: b.owner}))(t)
	if len(keys) != 2 || keys[0].ID != k.ID || keys[1].ID != fixed.Key.ID || keys[0].RevokedAt.IsZero() {
		t.Fatalf("ListAPIKeys = %+v", keys)
	}
	if keys := Must(s.ListAPIKeys(b.ctx, &store.ListAPIKeysParams{OwnerID: b.other}))(t); len(keys) != 0 {
		t.Fatalf("other owner lists %d keys", len(keys))
	}
	_, err = s.RevokeAPIKey(b.ctx, &store.RevokeAPIKeyParams{OwnerID: b.other, ID: fixed.Key.ID})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.CreateAPIKey(b.ctx, &store.CreateAPIKeyParams{OwnerID: "missing-" + uuid.NewString()})
	wantErr(t, err, store.ErrNotFound)
}

func testThreadCreateGet(t *testing.T, s store.Store, b *bundle) {
	md := map[string]json.RawMessage{"app": json.RawMessage(`{"a":1}`)}
	th := Must(s.CreateThread(b.ctx, &store.CreateThreadParams{
		OwnerID: b.owner, Name: "Trip ✈️ planning", Network: "travel", ActiveAgent: "triage", Metadata: md,
	}))(t)
	if th.ID == "" || th.OwnerID != b.owner || th.Name != "Trip ✈️ planning" || th.Network != "travel" ||
		th.ActiveAgent != "triage" || th.ParentID != "" || th.Version != 1 {
		t.Fatalf("CreateThread = %+v", th)
	}
	if _, err := uuid.Parse(th.ID); err != nil {
		t.Fatalf("ID %q is not a UUID: %v", th.ID, err)
	}
	checkTime(t, "CreatedAt", th.CreatedAt)
	if !th.UpdatedAt.Equal(th.CreatedAt) {
		t.Fatalf("UpdatedAt %v != CreatedAt %v", th.UpdatedAt, th.CreatedAt)
	}
	if len(th.Metadata) != 1 || !jsonEqual(th.Metadata["app"], md["app"]) {
		t.Fatalf("Metadata = %s", th.Metadata)
	}
	got := Must(s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.owner, ID: th.ID}))(t)
	if !reflect.DeepEqual(normThread(got), normThread(th)) {
		t.Fatalf("GetThread = %+v, want %+v", got, th)
	}

	id := "thread-" + uuid.NewString()
	th2 := Must(s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: b.owner, ID: id}))(t)
	if th2.ID != id || th2.Metadata == nil {
		t.Fatalf("CreateThread with ID = %+v", th2)
	}
	_, err := s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: b.owner, ID: id})
	wantErr(t, err, store.ErrConflict)
	_, err = s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: "missing-" + uuid.NewString()})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.owner, ID: "missing"})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: b.owner, Metadata: map[string]json.RawMessage{"x": json.RawMessage(`{`)}})
	wantErr(t, err, store.ErrInvalid)
}

// normThread re-encodes metadata values so that backends that normalise
// JSON compare equal.
func normThread(th *store.Thread) store.Thread {
	c := *th
	c.Metadata = map[string]json.RawMessage{}
	for k, v := range th.Metadata {
		var x any
		_ = json.Unmarshal(v, &x)
		c.Metadata[k], _ = json.Marshal(x)
	}
	return c
}

// testThreadWithMessages: a thread created with its first messages holds
// them from seq 1, and appends continue after them.
func testThreadWithMessages(t *testing.T, s store.Store, b *bundle) {
	th := Must(s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: b.owner, Network: "net", ActiveAgent: "triage",
		Messages: sampleMessages()[:2]}))(t)
	if th.ActiveAgent != "triage" {
		t.Errorf("active agent %q", th.ActiveAgent)
	}
	Must(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID, Messages: sampleMessages()[2:3]}))(t)
	msgs := Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: th.ID}))(t)
	want := sampleMessages()[:3]
	if len(msgs) != len(want) {
		t.Fatalf("%d messages, want %d", len(msgs), len(want))
	}
	for i, m := range msgs {
		if m.Seq != int64(i+1) || m.Text() != want[i].Message.Text() || m.Role != want[i].Message.Role {
			t.Errorf("message %d: seq %d %s %q, want seq %d %s %q", i, m.Seq, m.Role, m.Text(), i+1, want[i].Message.Role, want[i].Message.Text())
		}
	}
	// Invalid first messages create nothing.
	bad := &store.CreateThreadParams{OwnerID: b.owner, ID: "bad-" + uuid.NewString(), Messages: []store.NewMessage{{Message: message.Message{Role: "robot"}}}}
	_, err := s.CreateThread(b.ctx, bad)
	wantErr(t, err, store.ErrInvalid)
	_, err = s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.owner, ID: bad.ID})
	wantErr(t, err, store.ErrNotFound)
}

func testThreadParent(t *testing.T, s store.Store, b *bundle) {
	parent := newThread(t, s, b)
	child := Must(s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: b.owner, ParentID: parent.ID}))(t)
	if child.ParentID != parent.ID {
		t.Fatalf("ParentID = %q, want %q", child.ParentID, parent.ID)
	}
	_, err := s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: b.owner, ParentID: "missing"})
	wantErr(t, err, store.ErrNotFound)
	// A parent of another owner is missing too.
	_, err = s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: b.other, ParentID: parent.ID})
	wantErr(t, err, store.ErrNotFound)
	page := Must(s.ListThreads(b.ctx, &store.ListThreadsParams{OwnerID: b.owner, ParentID: parent.ID}))(t)
	if len(page.Threads) != 1 || page.Threads[0].ID != child.ID || page.NextCursor != "" {
		t.Fatalf("children = %+v", page)
	}
}

func testThreadList(t *testing.T, s store.Store, b *bundle) {
	const n = 7
	var ids []string
	for range n {
		ids = append(ids, newThread(t, s, b).ID)
	}
	newThread(t, s, &bundle{ctx: b.ctx, owner: b.other})
	var got []string
	cursor := ""
	pages := 0
	for {
		page := Must(s.ListThreads(b.ctx, &store.ListThreadsParams{OwnerID: b.owner, Limit: 3, Cursor: cursor}))(t)
		pages++
		for _, th := range page.Threads {
			got = append(got, th.ID)
		}
		if page.NextCursor == "" {
			break
		}
		if pages > n {
			t.Fatal("paging does not end")
		}
		cursor = page.NextCursor
	}
	// Newest first.
	want := make([]string, n)
	for i := range ids {
		want[n-1-i] = ids[i]
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	if pages != 3 {
		t.Fatalf("%d pages, want 3", pages)
	}
	all := Must(s.ListThreads(b.ctx, &store.ListThreadsParams{OwnerID: b.owner}))(t)
	if len(all.Threads) != n || all.NextCursor != "" {
		t.Fatalf("default page has %d threads, cursor %q", len(all.Threads), all.NextCursor)
	}
	_, err := s.ListThreads(b.ctx, &store.ListThreadsParams{OwnerID: b.owner, Cursor: "%%%"})
	wantErr(t, err, store.ErrInvalid)
	empty := Must(s.ListThreads(b.ctx, &store.ListThreadsParams{OwnerID: "nobody-" + uuid.NewString()}))(t)
	if len(empty.Threads) != 0 {
		t.Fatalf("unknown owner lists %d threads", len(empty.Threads))
	}
}

func testThreadMetadataMerge(t *testing.T, s store.Store, b *bundle) {
	th := Must(s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: b.owner,
		Metadata: map[string]json.RawMessage{"app": json.RawMessage(`{"keep":true}`)}}))(t)
	update := func(ns, patch string) *store.Thread {
		t.Helper()
		return Must(s.UpdateThreadMetadata(b.ctx, &store.UpdateThreadMetadataParams{
			OwnerID: b.owner, ThreadID: th.ID, Namespace: ns, Patch: json.RawMessage(patch)}))(t)
	}
	got := update(store.MetadataThreadHandoff, `{"handoff_id":"h1","seed":{"active":true,"n":1}}`)
	if got.Version != 2 || !got.UpdatedAt.After(th.UpdatedAt) && !got.UpdatedAt.Equal(th.UpdatedAt) {
		t.Fatalf("after update: version %d, updated %v", got.Version, got.UpdatedAt)
	}
	got = update(store.MetadataThreadHandoff, `{"seed":{"active":null,"cleared":true},"parent":"p"}`)
	want := `{"handoff_id":"h1","parent":"p","seed":{"n":1,"cleared":true}}`
	if !jsonEqual(got.Metadata[store.MetadataThreadHandoff], []byte(want)) {
		t.Fatalf("handoff = %s, want %s", got.Metadata[store.MetadataThreadHandoff], want)
	}
	if !jsonEqual(got.Metadata["app"], []byte(`{"keep":true}`)) {
		t.Fatalf("other namespace changed: %s", got.Metadata["app"])
	}
	if got.Version != 3 {
		t.Fatalf("version %d, want 3", got.Version)
	}
	// Big numbers survive the merge exactly.
	got = update("nums", `{"big":12345678901234567890}`)
	if !jsonEqual(got.Metadata["nums"], []byte(`{"big":12345678901234567890}`)) || !strings.Contains(string(got.Metadata["nums"]), "12345678901234567890") {
		t.Fatalf("nums = %s", got.Metadata["nums"])
	}
	got = update(store.MetadataThreadHandoff, `null`)
	if _, ok := got.Metadata[store.MetadataThreadHandoff]; ok {
		t.Fatalf("namespace not removed: %s", got.Metadata)
	}
	read := Must(s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.owner, ID: th.ID}))(t)
	if !reflect.DeepEqual(normThread(read), normThread(got)) {
		t.Fatalf("GetThread = %+v, want %+v", read, got)
	}
	_, err := s.UpdateThreadMetadata(b.ctx, &store.UpdateThreadMetadataParams{OwnerID: b.owner, ThreadID: th.ID, Namespace: "x", Patch: json.RawMessage(`{"a":`)})
	wantErr(t, err, store.ErrInvalid)
	_, err = s.UpdateThreadMetadata(b.ctx, &store.UpdateThreadMetadataParams{OwnerID: b.owner, ThreadID: th.ID, Patch: json.RawMessage(`{}`)})
	wantErr(t, err, store.ErrInvalid)
	_, err = s.UpdateThreadMetadata(b.ctx, &store.UpdateThreadMetadataParams{OwnerID: b.other, ThreadID: th.ID, Namespace: "x", Patch: json.RawMessage(`{}`)})
	wantErr(t, err, store.ErrNotFound)
}

func testThreadMetadataCAS(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	p := &store.UpdateThreadMetadataParams{OwnerID: b.owner, ThreadID: th.ID, Namespace: "ns", Patch: json.RawMessage(`{"v":1}`), ExpectedVersion: th.Version}
	up := Must(s.UpdateThreadMetadata(b.ctx, p))(t)
	if up.Version != th.Version+1 {
		t.Fatalf("version %d", up.Version)
	}
	// The same expected version again is stale.
	p.Patch = json.RawMessage(`{"v":2}`)
	_, err := s.UpdateThreadMetadata(b.ctx, p)
	vc := wantAs[*store.VersionConflictError](t, err)
	wantErr(t, err, store.ErrConflict)
	if vc.Expected != th.Version || vc.Actual != up.Version || vc.ID != th.ID {
		t.Fatalf("conflict = %+v", vc)
	}
	read := Must(s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.owner, ID: th.ID}))(t)
	if !jsonEqual(read.Metadata["ns"], []byte(`{"v":1}`)) || read.Version != up.Version {
		t.Fatalf("a failed CAS wrote: %s version %d", read.Metadata["ns"], read.Version)
	}
}

func testThreadMetadataConcurrentCAS(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	// Of concurrent compare-and-swaps exactly one wins.
	oneWinner(t, race(8, func(i int) error {
		return errOf(s.UpdateThreadMetadata(b.ctx, &store.UpdateThreadMetadataParams{
			OwnerID: b.owner, ThreadID: th.ID, Namespace: store.MetadataThreadHandoff,
			Patch: json.RawMessage(fmt.Sprintf(`{"cleared_by":%d}`, i)), ExpectedVersion: th.Version,
		}))
	}))
	read := Must(s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.owner, ID: th.ID}))(t)
	if read.Version != th.Version+1 {
		t.Fatalf("version %d, want %d", read.Version, th.Version+1)
	}
}

func testThreadActiveAgent(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	up := Must(s.SetActiveAgent(b.ctx, &store.SetActiveAgentParams{OwnerID: b.owner, ThreadID: th.ID, Agent: "billing", ExpectedVersion: 1}))(t)
	if up.ActiveAgent != "billing" || up.Version != 2 {
		t.Fatalf("SetActiveAgent = %+v", up)
	}
	_, err := s.SetActiveAgent(b.ctx, &store.SetActiveAgentParams{OwnerID: b.owner, ThreadID: th.ID, Agent: "x", ExpectedVersion: 1})
	wantAs[*store.VersionConflictError](t, err)
	up = Must(s.SetActiveAgent(b.ctx, &store.SetActiveAgentParams{OwnerID: b.owner, ThreadID: th.ID, Agent: "triage"}))(t)
	if up.ActiveAgent != "triage" || up.Version != 3 {
		t.Fatalf("SetActiveAgent without CAS = %+v", up)
	}
	_, err = s.SetActiveAgent(b.ctx, &store.SetActiveAgentParams{OwnerID: b.other, ThreadID: th.ID, Agent: "x"})
	wantErr(t, err, store.ErrNotFound)
}

// sampleMessages exercises every part type and field.
func sampleMessages() []store.NewMessage {
	return []store.NewMessage{
		{Message: message.System("Be brief. Ünïcödé ✓")},
		{Message: message.User("what's the weather in 東京?")},
		{Message: message.Message{
			Role: message.RoleAssistant, Agent: "weather",
			Parts: []message.Part{
				{Type: message.PartReasoning, Text: "thinking", Provider: "anthropic", Signature: "sig", ID: "r1"},
				{Type: message.PartText, Text: "Let me check."},
				{Type: message.PartToolCall, CallID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"東京","units":"c"}`)},
			},
			Usage:    &message.Usage{InputTokens: 120, OutputTokens: 30, CachedTokens: 100, ReasoningTokens: 10},
			Metadata: map[string]any{"continuation_id": "evt-1", "score": 0.5},
		}},
		{Message: message.ToolResult("weather", "call_1", "get_weather", `{"temp":21}`, false)},
		{Message: message.Message{Role: message.RoleUser, Parts: []message.Part{
			{Type: message.PartImage, MediaType: "image/png", Data: []byte{0x89, 'P', 'N', 'G', 0, 1, 2}},
			{Type: message.PartImage, URL: "https://example.com/a.png"},
		}}},
		{Message: message.Message{Role: message.RoleAssistant, Agent: "weather", Status: message.StatusQueued}, ParentID: "parent-msg"},
	}
}

func testMessagesAppendList(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	in := sampleMessages()
	in[1].Message.ID = "msg-" + uuid.NewString()
	out := Must(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID, Messages: in}))(t)
	if len(out) != len(in) {
		t.Fatalf("appended %d, want %d", len(out), len(in))
	}
	for i, m := range out {
		want := in[i].Message.Clone()
		if want.ID == "" {
			want.ID = m.ID
		}
		if want.Status == "" {
			want.Status = message.StatusCompleted
		}
		if want.Parts == nil {
			want.Parts = []message.Part{}
		}
		if m.Seq != int64(i+1) || m.ThreadID != th.ID || m.OwnerID != b.owner || m.ParentID != in[i].ParentID {
			t.Fatalf("message %d = seq %d thread %s owner %s parent %q", i, m.Seq, m.ThreadID, m.OwnerID, m.ParentID)
		}
		checkTime(t, "CreatedAt", m.CreatedAt)
		if !reflect.DeepEqual(m.Message, want) {
			t.Fatalf("message %d:\n got %+v\nwant %+v", i, m.Message, want)
		}
	}
	if out[1].ID != in[1].Message.ID {
		t.Fatalf("given ID not kept")
	}
	list := Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: th.ID}))(t)
	if !reflect.DeepEqual(list, out) {
		t.Fatalf("ListMessages differs from AppendMessages:\n got %+v\nwant %+v", list, out)
	}
	got := Must(s.GetMessage(b.ctx, &store.GetMessageParams{OwnerID: b.owner, ID: out[2].ID}))(t)
	if !reflect.DeepEqual(got, out[2]) {
		t.Fatalf("GetMessage = %+v, want %+v", got, out[2])
	}

	var after store.Thread
	more := Must(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: message.User("again")}}, Thread: &after}))(t)
	if more[0].Seq != int64(len(in)+1) {
		t.Fatalf("next seq = %d", more[0].Seq)
	}
	seqs := func(ms []*store.Message) (out []int64) {
		for _, m := range ms {
			out = append(out, m.Seq)
		}
		return out
	}
	for _, tc := range []struct {
		p    store.ListMessagesParams
		want []int64
	}{
		{store.ListMessagesParams{AfterSeq: 4}, []int64{5, 6, 7}},
		{store.ListMessagesParams{Limit: 2}, []int64{1, 2}},
		{store.ListMessagesParams{Limit: 3, Last: true}, []int64{5, 6, 7}},
		{store.ListMessagesParams{AfterSeq: 2, Limit: 2}, []int64{3, 4}},
		{store.ListMessagesParams{AfterSeq: 7}, nil},
	} {
		tc.p.OwnerID, tc.p.ThreadID = b.owner, th.ID
		got := Must(s.ListMessages(b.ctx, &tc.p))(t)
		if !reflect.DeepEqual(seqs(got), tc.want) || got == nil {
			t.Fatalf("ListMessages(%+v) = %v, want %v", tc.p, seqs(got), tc.want)
		}
	}
	updated := Must(s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.owner, ID: th.ID}))(t)
	if updated.UpdatedAt.Before(more[0].CreatedAt) || updated.Version != th.Version {
		t.Fatalf("thread after append: updated %v (message %v), version %d", updated.UpdatedAt, more[0].CreatedAt, updated.Version)
	}
	if !reflect.DeepEqual(&after, updated) {
		t.Fatalf("AppendMessages' Thread:\n got %+v\nwant %+v", &after, updated)
	}
	empty := newThread(t, s, b)
	if got := Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: empty.ID}))(t); got == nil || len(got) != 0 {
		t.Fatalf("empty thread lists %v", got)
	}
	_, err := s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: "missing"})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: "missing", Messages: in[:1]})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: "missing", Messages: in[:1], Thread: &after})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: message.Message{Role: "robot"}}}})
	wantErr(t, err, store.ErrInvalid)
	_, err = s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: message.Message{Role: message.RoleUser, Status: "done"}}}})
	wantErr(t, err, store.ErrInvalid)
}

func testMessagesAppendAtomic(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	first := Must(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: message.User("one")}}}))(t)
	dup := message.User("dup")
	dup.ID = first[0].ID
	_, err := s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: message.User("two")}, {Message: dup}}})
	wantErr(t, err, store.ErrConflict)
	list := Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: th.ID}))(t)
	if len(list) != 1 {
		t.Fatalf("a failed batch left %d messages, want 1", len(list))
	}
	next := Must(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: message.User("three")}}}))(t)
	if next[0].Seq != 2 {
		t.Fatalf("seq after a failed batch = %d, want 2", next[0].Seq)
	}
}

func testMessagesConcurrentAppend(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	const writers, each = 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				_, err := s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
					Messages: []store.NewMessage{{Message: message.User(fmt.Sprintf("w%d-%d", w, i))}}})
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent append: %v", err)
		}
	}
	list := Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: th.ID}))(t)
	if len(list) != writers*each {
		t.Fatalf("%d messages, want %d", len(list), writers*each)
	}
	for i, m := range list {
		if m.Seq != int64(i+1) {
			t.Fatalf("message %d has seq %d", i, m.Seq)
		}
	}
}

func testMessagesUpdate(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	placeholder := message.Message{Role: message.RoleAssistant, Agent: "a", Status: message.StatusQueued,
		Metadata: map[string]any{"keep": "yes", "drop": "x"}}
	m := Must(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: placeholder}}}))(t)[0]
	up := Must(s.UpdateMessage(b.ctx, &store.UpdateMessageParams{OwnerID: b.owner, ID: m.ID,
		Status: message.StatusStreaming, ExpectedStatus: message.StatusQueued}))(t)
	if up.Status != message.StatusStreaming || len(up.Parts) != 0 {
		t.Fatalf("after streaming: %+v", up)
	}
	usage := &message.Usage{InputTokens: 5, OutputTokens: 7}
	up = Must(s.UpdateMessage(b.ctx, &store.UpdateMessageParams{OwnerID: b.owner, ID: m.ID,
		Status: message.StatusCompleted, Parts: []message.Part{{Type: message.PartText, Text: "done ✓"}}, Usage: usage,
		Metadata: map[string]any{"drop": nil, "run_id": "r1"}, ExpectedStatus: message.StatusStreaming}))(t)
	want := map[string]any{"keep": "yes", "run_id": "r1"}
	if up.Status != message.StatusCompleted || up.Text() != "done ✓" || *up.Usage != *usage || !reflect.DeepEqual(up.Metadata, want) {
		t.Fatalf("after completion: %+v", up)
	}
	if up.UpdatedAt.Before(up.CreatedAt) || up.Seq != m.Seq || up.Agent != "a" {
		t.Fatalf("after completion: %+v", up)
	}
	// A second finisher expecting streaming loses and writes nothing.
	_, err := s.UpdateMessage(b.ctx, &store.UpdateMessageParams{OwnerID: b.owner, ID: m.ID,
		Status: message.StatusError, ExpectedStatus: message.StatusStreaming})
	te := wantAs[*store.TransitionError](t, err)
	wantErr(t, err, store.ErrConflict)
	if te.From != string(message.StatusCompleted) || te.To != string(message.StatusError) {
		t.Fatalf("TransitionError = %+v", te)
	}
	got := Must(s.GetMessage(b.ctx, &store.GetMessageParams{OwnerID: b.owner, ID: m.ID}))(t)
	if !reflect.DeepEqual(got, up) {
		t.Fatalf("a failed update wrote: %+v", got)
	}
	_, err = s.UpdateMessage(b.ctx, &store.UpdateMessageParams{OwnerID: b.owner, ID: m.ID, Status: "bogus"})
	wantErr(t, err, store.ErrInvalid)
	_, err = s.UpdateMessage(b.ctx, &store.UpdateMessageParams{OwnerID: b.other, ID: m.ID, Status: message.StatusError})
	wantErr(t, err, store.ErrNotFound)
}

// testMessagesUpdateAwaitsWriter: an update expecting the status that
// another transaction, still open, is moving the message to waits for that
// transaction and is decided by its outcome — made if it commits, refused
// with the status the message kept if it rolls back — immediate or
// deferred (UpdateMessageParams.Deferred) alike. (A continuation's final
// update, expecting the streaming status its draft flush's claim writes,
// races that claim's commit.)
func testMessagesUpdateAwaitsWriter(t *testing.T, s store.Store, b *bundle) {
	boom := errors.New("boom")
	for _, deferred := range []bool{false, true} {
		for _, commit := range []bool{true, false} {
			t.Run(fmt.Sprintf("deferred=%v/commit=%v", deferred, commit), func(t *testing.T) {
				th := newThread(t, s, b)
				m := Must(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
					Messages: []store.NewMessage{{Message: message.Message{Role: message.RoleAssistant, Status: message.StatusQueued}}}}))(t)[0]
				written, release := make(chan struct{}), make(chan struct{})
				writer := make(chan error, 1)
				go func() {
					writer <- s.Tx(b.ctx, func(tx store.Tx) error {
						if _, err := tx.UpdateMessage(b.ctx, &store.UpdateMessageParams{OwnerID: b.owner, ID: m.ID,
							Status: message.StatusStreaming, ExpectedStatus: message.StatusQueued}); err != nil {
							return err
						}
						close(written)
						<-release
						if !commit {
							return boom
						}
						return nil
					})
				}()
				select {
				case <-written:
				case err := <-writer:
					t.Fatalf("writer: %v", err)
				}
				finish := &store.UpdateMessageParams{OwnerID: b.owner, ID: m.ID, Status: message.StatusCompleted,
					Parts: []message.Part{{Type: message.PartText, Text: "done"}}, ExpectedStatus: message.StatusStreaming, Deferred: deferred}
				done := make(chan error, 1)
				go func() {
					done <- s.Tx(b.ctx, func(tx store.Tx) error {
						if _, err := tx.UpdateMessage(b.ctx, finish); err != nil {
							return err
						}
						// A deferred update goes with the next statement.
						_, err := tx.GetMessage(b.ctx, &store.GetMessageParams{OwnerID: b.owner, ID: m.ID})
						return err
					})
				}()
				awaited(t, "the update", done, writer, release)
				if err := <-writer; commit && err != nil || !commit && !errors.Is(err, boom) {
					t.Fatalf("writer: %v", err)
				}
				err := <-done
				got := Must(s.GetMessage(b.ctx, &store.GetMessageParams{OwnerID: b.owner, ID: m.ID}))(t)
				if commit {
					if err != nil {
						t.Fatalf("update after the writer committed: %v", err)
					}
					if got.Status != message.StatusCompleted || got.Text() != "done" {
						t.Fatalf("after the update: %+v", got)
					}
					return
				}
				te := wantAs[*store.TransitionError](t, err)
				if te.From != string(message.StatusQueued) || te.To != string(message.StatusCompleted) {
					t.Fatalf("TransitionError = %+v", te)
				}
				if got.Status != message.StatusQueued || len(got.Parts) != 0 {
					t.Fatalf("a refused update wrote: %+v", got)
				}
			})
		}
	}
}

// awaited checks that a write racing another transaction, still open
// (release ends it; other reports its end), has not returned (done) in the
// time it takes to reach the row, then releases the other transaction.
func awaited(t *testing.T, what string, done, other <-chan error, release chan struct{}) {
	t.Helper()
	select {
	case err := <-done:
		close(release)
		<-other
		t.Fatalf("%s returned while the other transaction was open: %v", what, err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
}

func testDrafts(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	m := Must(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: message.Message{Role: message.RoleAssistant, Status: message.StatusStreaming}}}}))(t)[0]
	_, err := s.GetDraft(b.ctx, &store.GetDraftParams{OwnerID: b.owner, MessageID: m.ID})
	wantErr(t, err, store.ErrNotFound)
	d := Must(s.UpsertDraft(b.ctx, &store.UpsertDraftParams{OwnerID: b.owner, MessageID: m.ID, Text: "Hel"}))(t)
	if d.Version != 1 || d.Text != "Hel" || d.MessageID != m.ID || d.OwnerID != b.owner {
		t.Fatalf("first draft = %+v", d)
	}
	checkTime(t, "UpdatedAt", d.UpdatedAt)
	d = Must(s.UpsertDraft(b.ctx, &store.UpsertDraftParams{OwnerID: b.owner, MessageID: m.ID, Text: "Hello, wörld"}))(t)
	if d.Version != 2 || d.Text != "Hello, wörld" {
		t.Fatalf("second draft = %+v", d)
	}
	got := Must(s.GetDraft(b.ctx, &store.GetDraftParams{OwnerID: b.owner, MessageID: m.ID}))(t)
	if *got != *d {
		t.Fatalf("GetDraft = %+v, want %+v", got, d)
	}
	_, err = s.GetDraft(b.ctx, &store.GetDraftParams{OwnerID: b.other, MessageID: m.ID})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.UpsertDraft(b.ctx, &store.UpsertDraftParams{OwnerID: b.other, MessageID: m.ID, Text: "hijack"})
	wantErr(t, err, store.ErrNotFound)
	if err := s.DeleteDraft(b.ctx, &store.DeleteDraftParams{OwnerID: b.other, MessageID: m.ID}); err != nil {
		t.Fatalf("DeleteDraft by another owner: %v", err)
	}
	if got := Must(s.GetDraft(b.ctx, &store.GetDraftParams{OwnerID: b.owner, MessageID: m.ID}))(t); got.Text != "Hello, wörld" {
		t.Fatalf("another owner changed the draft: %+v", got)
	}
	_, err = s.UpsertDraft(b.ctx, &store.UpsertDraftParams{OwnerID: b.owner, MessageID: "missing", Text: "x"})
	wantErr(t, err, store.ErrNotFound)
	if err := s.DeleteDraft(b.ctx, &store.DeleteDraftParams{OwnerID: b.owner, MessageID: m.ID}); err != nil {
		t.Fatal(err)
	}
	_, err = s.GetDraft(b.ctx, &store.GetDraftParams{OwnerID: b.owner, MessageID: m.ID})
	wantErr(t, err, store.ErrNotFound)
	if err := s.DeleteDraft(b.ctx, &store.DeleteDraftParams{OwnerID: b.owner, MessageID: m.ID}); err != nil {
		t.Fatalf("deleting a missing draft: %v", err)
	}
}

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
	// save runs p deferred in a transaction, then a statement of the other
	// owner, and returns the checkpoint and the transaction's error.
	save := func(p *store.SaveCheckpointParams) (*store.Checkpoint, error) {
		p.Deferred = true
		var cp *store.Checkpoint
		err := s.Tx(b.ctx, func(tx store.Tx) error {
			var err error
			if cp, err = tx.SaveCheckpoint(b.ctx, p); err != nil {
				return err
			}
			_, err = tx.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.other, ID: others.ID})
			return err
		})
		return cp, err
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
	// save runs p deferred in a transaction, then, with follow, a
	// statement of the other owner, and returns the checkpoint and the
	// transaction's error.
	save := func(p *store.SaveCheckpointParams, follow bool) (*store.Checkpoint, error) {
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
	run := "run-" + uuid.NewString()
	first := Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, th.ID, 1)}))(t)
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
	if n := len(Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.other, ThreadID: others.ID}))(t)); n != 0 {
		t.Errorf("the other owner's thread has %d messages, want 0", n)
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
	for _, to := range []store.JobStatus{store.JobProcessing, store.JobCompleted, store.JobQueued, store.JobError, store.JobCanceled} {
		_, err := move(to, "", 0)
		te := wantAs[*store.TransitionError](t, err)
		wantErr(t, err, store.ErrConflict)
		if te.From != "completed" || te.To != string(to) {
			t.Fatalf("TransitionError = %+v", te)
		}
	}
	got := Must(s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: b.owner, ID: j.ID}))(t)
	if !reflect.DeepEqual(got, done) {
		t.Fatalf("refused transitions wrote: %+v", got)
	}
	q := Must(s.CreateJobRun(b.ctx, &store.CreateJobRunParams{OwnerID: b.owner, IdempotencyKey: uuid.NewString(), Kind: "k"}))(t).Run
	c := Must(s.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: b.owner, ID: q.ID, To: store.JobCanceled, Error: "user canceled"}))(t)
	if c.Status != store.JobCanceled || c.Error != "user canceled" {
		t.Fatalf("canceled = %+v", c)
	}
	q2 := Must(s.CreateJobRun(b.ctx, &store.CreateJobRunParams{OwnerID: b.owner, IdempotencyKey: uuid.NewString(), Kind: "k"}))(t).Run
	_, err = s.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: b.owner, ID: q2.ID, To: store.JobCompleted})
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

// testOwnerIsolation reads and writes every kind of row of one owner as
// another: all of it is ErrNotFound, and nothing changes.
func testOwnerIsolation(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	msg := Must(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: message.User("secret")}}}))(t)[0]
	Must(s.UpsertDraft(b.ctx, &store.UpsertDraftParams{OwnerID: b.owner, MessageID: msg.ID, Text: "secret draft"}))(t)
	run := "run-" + uuid.NewString()
	cp := Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, th.ID, 1)}))(t)
	job := Must(s.CreateJobRun(b.ctx, &store.CreateJobRunParams{OwnerID: b.owner, IdempotencyKey: "k-" + run, Kind: "k", ThreadID: th.ID}))(t).Run
	hid := "h-" + run
	Must(s.UpsertThreadSummary(b.ctx, &store.UpsertThreadSummaryParams{OwnerID: b.owner, HandoffID: hid, Summary: json.RawMessage(`{}`)}))(t)
	Must(s.PutMemoryDocument(b.ctx, &store.PutMemoryDocumentParams{OwnerID: b.owner, AgentID: "a-" + run, Content: "secret"}))(t)
	key := Must(s.CreateAPIKey(b.ctx, &store.CreateAPIKeyParams{OwnerID: b.owner}))(t)
	in := Must(s.CreateInterrupt(b.ctx, &store.CreateInterruptParams{OwnerID: b.owner, ID: "i-" + run, Kind: store.InterruptThreadHandoff, ThreadID: th.ID,
		Payload: json.RawMessage(`{"summary_md":"secret"}`)}))(t)

	o := b.other
	for name, call := range map[string]func() error{
		"GetOwner":  func() error { return errOf(s.GetOwner(b.ctx, &store.GetOwnerParams{ID: "missing"})) },
		"GetThread": func() error { return errOf(s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: o, ID: th.ID})) },
		"UpdateThreadMetadata": func() error {
			return errOf(s.UpdateThreadMetadata(b.ctx, &store.UpdateThreadMetadataParams{OwnerID: o, ThreadID: th.ID, Namespace: "x", Patch: json.RawMessage(`1`)}))
		},
		"SetActiveAgent": func() error {
			return errOf(s.SetActiveAgent(b.ctx, &store.SetActiveAgentParams{OwnerID: o, ThreadID: th.ID, Agent: "x"}))
		},
		"CreateThreadChild": func() error {
			return errOf(s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: o, ParentID: th.ID}))
		},
		"AppendMessages": func() error {
			return errOf(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: o, ThreadID: th.ID, Messages: []store.NewMessage{{Message: message.User("x")}}}))
		},
		"ListMessages": func() error {
			return errOf(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: o, ThreadID: th.ID}))
		},
		"GetMessage": func() error { return errOf(s.GetMessage(b.ctx, &store.GetMessageParams{OwnerID: o, ID: msg.ID})) },
		"UpdateMessage": func() error {
			return errOf(s.UpdateMessage(b.ctx, &store.UpdateMessageParams{OwnerID: o, ID: msg.ID, Status: message.StatusError}))
		},
		"GetDraft": func() error { return errOf(s.GetDraft(b.ctx, &store.GetDraftParams{OwnerID: o, MessageID: msg.ID})) },
		"UpsertDraft": func() error {
			return errOf(s.UpsertDraft(b.ctx, &store.UpsertDraftParams{OwnerID: o, MessageID: msg.ID, Text: "x"}))
		},
		"GetCheckpoint": func() error { return errOf(s.GetCheckpoint(b.ctx, &store.GetCheckpointParams{OwnerID: o, ID: cp.ID})) },
		"LatestCheckpointRun": func() error {
			return errOf(s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: o, RunID: run}))
		},
		"LatestCheckpointThread": func() error {
			return errOf(s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: o, ThreadID: th.ID}))
		},
		"SaveCheckpointOnThread": func() error {
			return errOf(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: o, State: newState(run, th.ID, 9)}))
		},
		"GetJobRun": func() error { return errOf(s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: o, ID: job.ID})) },
		"GetJobRunByKey": func() error {
			return errOf(s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: o, IdempotencyKey: job.IdempotencyKey}))
		},
		"TransitionJobRun": func() error {
			return errOf(s.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: o, ID: job.ID, To: store.JobCanceled}))
		},
		"GetThreadSummary": func() error {
			return errOf(s.GetThreadSummary(b.ctx, &store.GetThreadSummaryParams{OwnerID: o, HandoffID: hid}))
		},
		"GetMemoryDocument": func() error {
			return errOf(s.GetMemoryDocument(b.ctx, &store.GetMemoryDocumentParams{OwnerID: o, AgentID: "a-" + run}))
		},
		"RevokeAPIKey": func() error {
			return errOf(s.RevokeAPIKey(b.ctx, &store.RevokeAPIKeyParams{OwnerID: o, ID: key.Key.ID}))
		},
		"GetInterrupt": func() error { return errOf(s.GetInterrupt(b.ctx, &store.GetInterruptParams{OwnerID: o, ID: in.ID})) },
		"DecideInterrupt": func() error {
			return errOf(s.DecideInterrupt(b.ctx, &store.DecideInterruptParams{OwnerID: o, ID: in.ID, Status: store.InterruptDecided, Outcome: json.RawMessage(`{}`)}))
		},
		"CreateInterruptOnThread": func() error {
			_, err := s.CreateInterrupt(b.ctx, &store.CreateInterruptParams{OwnerID: o, ID: "x", Kind: store.InterruptThreadHandoff, ThreadID: th.ID,
				Payload: json.RawMessage(`{}`)})
			return err
		},
	} {
		if err := call(); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s as another owner: error = %v, want ErrNotFound", name, err)
		}
	}
	page := Must(s.ListThreads(b.ctx, &store.ListThreadsParams{OwnerID: o}))(t)
	if len(page.Threads) != 0 {
		t.Errorf("another owner lists %d threads", len(page.Threads))
	}
	// Nothing changed.
	if got := Must(s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.owner, ID: th.ID}))(t); got.Version != th.Version || got.ActiveAgent != th.ActiveAgent {
		t.Errorf("thread changed: %+v", got)
	}
	if got := Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: th.ID}))(t); len(got) != 1 || got[0].Status != message.StatusCompleted {
		t.Errorf("messages changed: %+v", got)
	}
	if got := Must(s.GetDraft(b.ctx, &store.GetDraftParams{OwnerID: b.owner, MessageID: msg.ID}))(t); got.Text != "secret draft" {
		t.Errorf("draft changed: %+v", got)
	}
	if got := Must(s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner, RunID: run}))(t); got.ID != cp.ID {
		t.Errorf("checkpoint changed: %+v", got)
	}
	if got := Must(s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: b.owner, ID: job.ID}))(t); got.Status != store.JobQueued {
		t.Errorf("job run changed: %+v", got)
	}
	if got := Must(s.LookupAPIKey(b.ctx, &store.LookupAPIKeyParams{Hash: key.Key.Hash}))(t); !got.RevokedAt.IsZero() {
		t.Errorf("api key revoked by another owner")
	}
	if got := Must(s.ListInterrupts(b.ctx, &store.ListInterruptsParams{OwnerID: o, ThreadID: th.ID}))(t); len(got) != 0 {
		t.Errorf("another owner lists %d interrupts", len(got))
	}
	if got := Must(s.GetInterrupt(b.ctx, &store.GetInterruptParams{OwnerID: b.owner, ID: in.ID}))(t); got.Status != store.InterruptPending {
		t.Errorf("interrupt decided by another owner: %+v", got)
	}
}

func testInvalidParams(t *testing.T, s store.Store, b *bundle) {
	ctx := b.ctx
	for name, call := range map[string]func() error{
		"EnsureOwner":    func() error { return errOf(s.EnsureOwner(ctx, &store.EnsureOwnerParams{})) },
		"CreateThread":   func() error { return errOf(s.CreateThread(ctx, &store.CreateThreadParams{})) },
		"GetThread":      func() error { return errOf(s.GetThread(ctx, &store.GetThreadParams{OwnerID: b.owner})) },
		"ListThreads":    func() error { return errOf(s.ListThreads(ctx, &store.ListThreadsParams{OwnerID: b.owner, Limit: -1})) },
		"AppendMessages": func() error { return errOf(s.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: b.owner})) },
		"ListMessages":   func() error { return errOf(s.ListMessages(ctx, &store.ListMessagesParams{ThreadID: "t"})) },
		"UpsertDraft":    func() error { return errOf(s.UpsertDraft(ctx, &store.UpsertDraftParams{OwnerID: b.owner})) },
		"LookupAPIKey":   func() error { return errOf(s.LookupAPIKey(ctx, &store.LookupAPIKeyParams{})) },
		"GetMemory":      func() error { return errOf(s.GetMemoryDocument(ctx, &store.GetMemoryDocumentParams{OwnerID: b.owner})) },
		"PutMemory": func() error {
			return errOf(s.PutMemoryDocument(ctx, &store.PutMemoryDocumentParams{OwnerID: b.owner, AgentID: "a", ExpectedVersion: -1}))
		},
		"UpsertSummary": func() error {
			return errOf(s.UpsertThreadSummary(ctx, &store.UpsertThreadSummaryParams{OwnerID: b.owner}))
		},
		"TransitionJob": func() error {
			return errOf(s.TransitionJobRun(ctx, &store.TransitionJobRunParams{OwnerID: b.owner, ID: "x"}))
		},
		"GetCheckpoint": func() error { return errOf(s.GetCheckpoint(ctx, &store.GetCheckpointParams{ID: "x"})) },
		"UpdateMessage": func() error { return errOf(s.UpdateMessage(ctx, &store.UpdateMessageParams{OwnerID: b.owner})) },
		"AcquireLease": func() error {
			return errOf(s.AcquireLease(ctx, &store.AcquireLeaseParams{OwnerID: b.owner, RunID: "r", Holder: "h"}))
		},
		"ReleaseLease": func() error { return errOf(s.ReleaseLease(ctx, &store.ReleaseLeaseParams{OwnerID: b.owner})) },
		"RenewLeases":  func() error { return errOf(s.RenewLeases(ctx, &store.RenewLeasesParams{Holder: "h", TTL: -1})) },
		"CreateInterruptKind": func() error {
			return errOf(s.CreateInterrupt(ctx, &store.CreateInterruptParams{OwnerID: b.owner, ID: "i", Kind: "other", Payload: json.RawMessage(`{}`)}))
		},
		"CreateInterruptRunID": func() error {
			return errOf(s.CreateInterrupt(ctx, &store.CreateInterruptParams{OwnerID: b.owner, ID: "i", Kind: store.InterruptRun, Payload: json.RawMessage(`{}`)}))
		},
		"CreateInterruptThread": func() error {
			return errOf(s.CreateInterrupt(ctx, &store.CreateInterruptParams{OwnerID: b.owner, ID: "i", Kind: store.InterruptThreadHandoff, Payload: json.RawMessage(`{}`)}))
		},
		"CreateInterruptPayload": func() error {
			return errOf(s.CreateInterrupt(ctx, &store.CreateInterruptParams{OwnerID: b.owner, ID: "i", Kind: store.InterruptRun, RunID: "r", Payload: json.RawMessage(`[1]`)}))
		},
		"GetInterrupt":   func() error { return errOf(s.GetInterrupt(ctx, &store.GetInterruptParams{OwnerID: b.owner})) },
		"ListInterrupts": func() error { return errOf(s.ListInterrupts(ctx, &store.ListInterruptsParams{OwnerID: b.owner})) },
		"DecideInterruptStatus": func() error {
			return errOf(s.DecideInterrupt(ctx, &store.DecideInterruptParams{OwnerID: b.owner, ID: "i", Status: store.InterruptPending, Outcome: json.RawMessage(`{}`)}))
		},
		"DecideInterruptOutcome": func() error {
			return errOf(s.DecideInterrupt(ctx, &store.DecideInterruptParams{OwnerID: b.owner, ID: "i", Status: store.InterruptDecided, Outcome: json.RawMessage(`{`)}))
		},
	} {
		if err := call(); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: error = %v, want ErrInvalid", name, err)
		}
	}
}

func testLeases(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	run := "run-" + uuid.NewString()
	_, err := s.GetLease(b.ctx, &store.GetLeaseParams{OwnerID: b.owner, RunID: run})
	wantErr(t, err, store.ErrNotFound)
	l := Must(s.AcquireLease(b.ctx, &store.AcquireLeaseParams{OwnerID: b.owner, RunID: run, ThreadID: th.ID, Holder: "p1", TTL: time.Minute}))(t)
	if l.Holder != "p1" || l.ThreadID != th.ID || l.RunID != run || l.OwnerID != b.owner {
		t.Fatalf("lease %+v", l)
	}
	checkTime(t, "ExpiresAt", l.ExpiresAt)
	if d := time.Until(l.ExpiresAt); d < 50*time.Second || d > 70*time.Second {
		t.Errorf("lease expires in %s, want about a minute", d)
	}
	// Acquiring again replaces the holder (the fenced checkpoint decides).
	Must(s.AcquireLease(b.ctx, &store.AcquireLeaseParams{OwnerID: b.owner, RunID: run, ThreadID: th.ID, Holder: "p2", TTL: time.Minute}))(t)
	got := Must(s.GetLease(b.ctx, &store.GetLeaseParams{OwnerID: b.owner, RunID: run}))(t)
	if got.Holder != "p2" {
		t.Fatalf("holder %s, want p2", got.Holder)
	}
	// Another owner sees nothing and releases nothing.
	_, err = s.GetLease(b.ctx, &store.GetLeaseParams{OwnerID: b.other, RunID: run})
	wantErr(t, err, store.ErrNotFound)
	if ok := Must(s.ReleaseLease(b.ctx, &store.ReleaseLeaseParams{OwnerID: b.other, RunID: run}))(t); ok {
		t.Fatal("another owner released the lease")
	}
	// Conditional releases: the wrong holder, an unexpired lease.
	if ok := Must(s.ReleaseLease(b.ctx, &store.ReleaseLeaseParams{OwnerID: b.owner, RunID: run, Holder: "p1"}))(t); ok {
		t.Fatal("p1 released p2's lease")
	}
	if ok := Must(s.ReleaseLease(b.ctx, &store.ReleaseLeaseParams{OwnerID: b.owner, RunID: run, Expired: true}))(t); ok {
		t.Fatal("an unexpired lease was released as expired")
	}
	if ok := Must(s.ReleaseLease(b.ctx, &store.ReleaseLeaseParams{OwnerID: b.owner, RunID: run, Holder: "p2"}))(t); !ok {
		t.Fatal("the holder could not release its lease")
	}
	if ok := Must(s.ReleaseLease(b.ctx, &store.ReleaseLeaseParams{OwnerID: b.owner, RunID: run}))(t); ok {
		t.Fatal("a released lease was released again")
	}
	// A lease on a missing thread is refused; a lease rolls back with its
	// transaction.
	_, err = s.AcquireLease(b.ctx, &store.AcquireLeaseParams{OwnerID: b.owner, RunID: run, ThreadID: "missing-" + run, Holder: "p1", TTL: time.Minute})
	if err == nil {
		t.Fatal("a lease on a missing thread was accepted")
	}
	boom := errors.New("boom")
	err = s.Tx(b.ctx, func(tx store.Tx) error {
		Must(tx.AcquireLease(b.ctx, &store.AcquireLeaseParams{OwnerID: b.owner, RunID: run, ThreadID: th.ID, Holder: "p1", TTL: time.Minute}))(t)
		return boom
	})
	wantErr(t, err, boom)
	_, err = s.GetLease(b.ctx, &store.GetLeaseParams{OwnerID: b.owner, RunID: run})
	wantErr(t, err, store.ErrNotFound)
}

// testLeaseSweep: renewals extend only the holder's named runs, across
// owners; expired leases are found across owners, and an adopter's
// conditional release takes each once.
func testLeaseSweep(t *testing.T, s store.Store, b *bundle) {
	holder := "sweep-" + uuid.NewString()
	mine := newThread(t, s, b)
	theirs := Must(s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: b.other, Name: "thread", Network: "net"}))(t)
	runA, runB, runC := "run-a-"+uuid.NewString(), "run-b-"+uuid.NewString(), "run-c-"+uuid.NewString()
	short := 20 * time.Millisecond
	Must(s.AcquireLease(b.ctx, &store.AcquireLeaseParams{OwnerID: b.owner, RunID: runA, ThreadID: mine.ID, Holder: holder, TTL: short}))(t)
	Must(s.AcquireLease(b.ctx, &store.AcquireLeaseParams{OwnerID: b.other, RunID: runB, ThreadID: theirs.ID, Holder: holder, TTL: short}))(t)
	Must(s.AcquireLease(b.ctx, &store.AcquireLeaseParams{OwnerID: b.owner, RunID: runC, ThreadID: mine.ID, Holder: holder, TTL: short}))(t)
	// The holder still runs A and B (two owners); C is left to expire.
	if n := Must(s.RenewLeases(b.ctx, &store.RenewLeasesParams{Holder: holder, RunIDs: []string{runA, runB}, TTL: time.Minute}))(t); n != 2 {
		t.Fatalf("renewed %d leases, want 2", n)
	}
	if n := Must(s.RenewLeases(b.ctx, &store.RenewLeasesParams{Holder: "someone else", RunIDs: []string{runC}, TTL: time.Minute}))(t); n != 0 {
		t.Fatalf("another holder renewed %d leases", n)
	}
	time.Sleep(3 * short)
	expired := Must(s.ExpiredLeases(b.ctx, &store.ExpiredLeasesParams{Limit: 1000}))(t)
	found := map[string]*store.Lease{}
	for _, l := range expired {
		found[l.RunID] = l
		if !l.ExpiresAt.Before(time.Now()) {
			t.Errorf("lease of %s expires at %v, in the future", l.RunID, l.ExpiresAt)
		}
	}
	if found[runA] != nil || found[runB] != nil {
		t.Fatalf("renewed leases are reported expired")
	}
	c := found[runC]
	if c == nil || c.OwnerID != b.owner || c.ThreadID != mine.ID || c.Holder != holder {
		t.Fatalf("the expired lease of C is missing or wrong: %+v", c)
	}
	// Two adopters race for C: one wins.
	took := make([]bool, 4)
	for i, err := range race(len(took), func(i int) (err error) {
		took[i], err = s.ReleaseLease(b.ctx, &store.ReleaseLeaseParams{OwnerID: b.owner, RunID: runC, Expired: true})
		return err
	}) {
		if err != nil {
			t.Errorf("adopter %d: %v", i, err)
		}
	}
	if wins := countTrue(took); wins != 1 {
		t.Fatalf("%d adopters took the expired lease, want 1", wins)
	}
}

func newInterrupt(b *bundle, th *store.Thread, kind, id string) *store.CreateInterruptParams {
	p := &store.CreateInterruptParams{OwnerID: b.owner, ID: id, Kind: kind, ThreadID: th.ID, Network: "net", Agent: "billing",
		Payload: json.RawMessage(`{"schema_version":1,"summary_md":"### Refund ☂"}`)}
	if kind == store.InterruptRun {
		p.RunID = "run-" + id
	}
	return p
}

func testInterrupts(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	run := Must(s.CreateInterrupt(b.ctx, newInterrupt(b, th, store.InterruptRun, "run-i3")))(t)
	if run.Kind != store.InterruptRun || run.Status != store.InterruptPending || run.RunID != "run-run-i3" || run.ThreadID != th.ID ||
		run.Network != "net" || run.Agent != "billing" || run.OwnerID != b.owner || run.Decision != nil || run.Outcome != nil ||
		!run.DecidedAt.IsZero() || !jsonEqual(run.Payload, []byte(`{"schema_version":1,"summary_md":"### Refund ☂"}`)) {
		t.Fatalf("CreateInterrupt = %+v", run)
	}
	checkTime(t, "CreatedAt", run.CreatedAt)
	hp := newInterrupt(b, th, store.InterruptThreadHandoff, "h-"+uuid.NewString())
	h1 := Must(s.CreateInterrupt(b.ctx, hp))(t)
	// One pending thread handoff per thread, one id per owner.
	_, err := s.CreateInterrupt(b.ctx, newInterrupt(b, th, store.InterruptThreadHandoff, "h-"+uuid.NewString()))
	wantErr(t, err, store.ErrConflict)
	_, err = s.CreateInterrupt(b.ctx, newInterrupt(b, th, store.InterruptRun, "run-i3"))
	wantErr(t, err, store.ErrConflict)
	// A thread without any, and the same ids for another owner, are fine.
	other := Must(s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: b.other}))(t)
	theirs := newInterrupt(b, other, store.InterruptRun, "run-i3")
	theirs.OwnerID = b.other
	Must(s.CreateInterrupt(b.ctx, theirs))(t)

	got := Must(s.GetInterrupt(b.ctx, &store.GetInterruptParams{OwnerID: b.owner, ID: h1.ID}))(t)
	if !reflect.DeepEqual(normInterrupt(got), normInterrupt(h1)) {
		t.Fatalf("GetInterrupt = %+v, want %+v", got, h1)
	}
	all := Must(s.ListInterrupts(b.ctx, &store.ListInterruptsParams{OwnerID: b.owner, ThreadID: th.ID}))(t)
	if len(all) != 2 || all[0].ID != run.ID || all[1].ID != h1.ID {
		t.Fatalf("ListInterrupts = %+v", all)
	}
	handoffs := Must(s.ListInterrupts(b.ctx, &store.ListInterruptsParams{OwnerID: b.owner, ThreadID: th.ID, Kind: store.InterruptThreadHandoff,
		Status: store.InterruptPending}))(t)
	if len(handoffs) != 1 || handoffs[0].ID != h1.ID {
		t.Fatalf("ListInterrupts(thread_handoff, pending) = %+v", handoffs)
	}

	d := &store.DecideInterruptParams{OwnerID: b.owner, ID: h1.ID, Status: store.InterruptDecided,
		Decision: json.RawMessage(`{"type":"approve"}`), Outcome: json.RawMessage(`{"child_thread_id":"c1"}`)}
	dec := Must(s.DecideInterrupt(b.ctx, d))(t)
	if dec.Status != store.InterruptDecided || !jsonEqual(dec.Decision, d.Decision) || !jsonEqual(dec.Outcome, d.Outcome) {
		t.Fatalf("DecideInterrupt = %+v", dec)
	}
	checkTime(t, "DecidedAt", dec.DecidedAt)
	// A second decision loses and learns the first.
	_, err = s.DecideInterrupt(b.ctx, &store.DecideInterruptParams{OwnerID: b.owner, ID: h1.ID, Status: store.InterruptDecided,
		Decision: json.RawMessage(`{"type":"reject"}`), Outcome: json.RawMessage(`{}`)})
	np := wantAs[*store.NotPendingError](t, err)
	wantErr(t, err, store.ErrConflict)
	if np.Interrupt.Status != store.InterruptDecided || !jsonEqual(np.Interrupt.Outcome, d.Outcome) || !jsonEqual(np.Interrupt.Decision, d.Decision) {
		t.Fatalf("NotPendingError carries %+v", np.Interrupt)
	}
	// Decided, it no longer blocks a new proposal.
	h2 := Must(s.CreateInterrupt(b.ctx, newInterrupt(b, th, store.InterruptThreadHandoff, "h-"+uuid.NewString())))(t)
	Must(s.DecideInterrupt(b.ctx, &store.DecideInterruptParams{OwnerID: b.owner, ID: h2.ID, Status: store.InterruptSuperseded,
		Outcome: json.RawMessage(`{"superseded_by":"h3"}`)}))(t)
	Must(s.CreateInterrupt(b.ctx, newInterrupt(b, th, store.InterruptThreadHandoff, "h-"+uuid.NewString())))(t)
	pending := Must(s.ListInterrupts(b.ctx, &store.ListInterruptsParams{OwnerID: b.owner, ThreadID: th.ID, Status: store.InterruptPending}))(t)
	if len(pending) != 2 {
		t.Fatalf("pending = %+v, want the run's and the newest handoff", pending)
	}
	if got := Must(s.ListInterrupts(b.ctx, &store.ListInterruptsParams{OwnerID: b.owner, ThreadID: "missing"}))(t); got == nil || len(got) != 0 {
		t.Fatalf("ListInterrupts of a missing thread = %#v, want empty", got)
	}

	// A thread that does not exist; a run interrupt without a thread.
	missing := newInterrupt(b, th, store.InterruptRun, "x-i1")
	missing.ThreadID = "missing"
	_, err = s.CreateInterrupt(b.ctx, missing)
	wantErr(t, err, store.ErrNotFound)
	missing.ThreadID = ""
	if got := Must(s.CreateInterrupt(b.ctx, missing))(t); got.ThreadID != "" {
		t.Fatalf("run interrupt without a thread = %+v", got)
	}
	_, err = s.DecideInterrupt(b.ctx, &store.DecideInterruptParams{OwnerID: b.owner, ID: "missing", Status: store.InterruptDecided, Outcome: json.RawMessage(`{}`)})
	wantErr(t, err, store.ErrNotFound)
}

func normInterrupt(in *store.Interrupt) store.Interrupt {
	c := *in
	c.Payload, c.Decision, c.Outcome = nil, nil, nil
	return c
}

// testInterruptConflictsInTx checks that the conflicts of CreateInterrupt
// and DecideInterrupt leave a transaction usable: a caller decides what to
// do with them (PostgreSQL aborts a transaction on a statement's error).
func testInterruptConflictsInTx(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	first := Must(s.CreateInterrupt(b.ctx, newInterrupt(b, th, store.InterruptThreadHandoff, "h-"+uuid.NewString())))(t)
	Must(s.DecideInterrupt(b.ctx, &store.DecideInterruptParams{OwnerID: b.owner, ID: first.ID, Status: store.InterruptDecided, Outcome: json.RawMessage(`{}`)}))(t)
	second := Must(s.CreateInterrupt(b.ctx, newInterrupt(b, th, store.InterruptThreadHandoff, "h-"+uuid.NewString())))(t)
	err := s.Tx(b.ctx, func(tx store.Tx) error {
		if _, err := tx.CreateInterrupt(b.ctx, newInterrupt(b, th, store.InterruptThreadHandoff, "h-"+uuid.NewString())); !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("second pending handoff: %v, want ErrConflict", err)
		}
		if _, err := tx.CreateInterrupt(b.ctx, newInterrupt(b, th, store.InterruptThreadHandoff, second.ID)); !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("taken id: %v, want ErrConflict", err)
		}
		_, err := tx.DecideInterrupt(b.ctx, &store.DecideInterruptParams{OwnerID: b.owner, ID: first.ID, Status: store.InterruptDecided, Outcome: json.RawMessage(`{}`)})
		if np, ok := errors.AsType[*store.NotPendingError](err); !ok || np.Interrupt.ID != first.ID {
			return fmt.Errorf("decided twice: %v, want a NotPendingError", err)
		}
		if _, err := tx.DecideInterrupt(b.ctx, &store.DecideInterruptParams{OwnerID: b.owner, ID: second.ID, Status: store.InterruptSuperseded,
			Outcome: json.RawMessage(`{}`)}); err != nil {
			return err
		}
		_, err = tx.CreateInterrupt(b.ctx, newInterrupt(b, th, store.InterruptThreadHandoff, "h-third"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	pending := Must(s.ListInterrupts(b.ctx, &store.ListInterruptsParams{OwnerID: b.owner, ThreadID: th.ID, Status: store.InterruptPending}))(t)
	if len(pending) != 1 || pending[0].ID != "h-third" {
		t.Fatalf("pending after the transaction = %+v", pending)
	}
}

func testInterruptConcurrent(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	const n = 8
	// Concurrent proposals: one is stored.
	oneWinner(t, race(n, func(i int) error {
		return errOf(s.CreateInterrupt(b.ctx, newInterrupt(b, th, store.InterruptThreadHandoff, fmt.Sprintf("h-%d-%s", i, uuid.NewString()))))
	}))
	pending := Must(s.ListInterrupts(b.ctx, &store.ListInterruptsParams{OwnerID: b.owner, ThreadID: th.ID, Status: store.InterruptPending}))(t)
	if len(pending) != 1 {
		t.Fatalf("pending = %+v", pending)
	}
	// Concurrent decisions: one wins, the others see its outcome.
	id := pending[0].ID
	errs := race(n, func(i int) error {
		return errOf(s.DecideInterrupt(b.ctx, &store.DecideInterruptParams{OwnerID: b.owner, ID: id, Status: store.InterruptDecided,
			Decision: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), Outcome: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}))
	})
	winner := oneWinner(t, errs)
	for i, err := range errs {
		if i == winner {
			continue
		}
		np := wantAs[*store.NotPendingError](t, err)
		if want := fmt.Sprintf(`{"n":%d}`, winner); !jsonEqual(np.Interrupt.Outcome, []byte(want)) {
			t.Fatalf("loser %d sees outcome %s, want %s", i, np.Interrupt.Outcome, want)
		}
	}
}
