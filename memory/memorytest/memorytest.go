// Package memorytest is the conformance suite of [memory.Store]: every
// implementation passes [Run].
package memorytest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/batonhq/baton/memory"
)

// Run checks the contract of [memory.Store] on stores made by newStore,
// which is called once per subtest and must return an empty store (or one
// where the owners used by the suite have no documents). Owners used by the
// suite start with "memorytest-"; newStore may rely on them existing if it
// creates them. Subtests run in parallel.
func Run(t *testing.T, newStore func(t *testing.T) memory.Store) {
	t.Helper()
	for _, tc := range []struct {
		name string
		test func(*testing.T, func(t *testing.T) memory.Store)
	}{
		{"GetMissing", testGetMissing},
		{"CreateGetReplace", testCreateGetReplace},
		{"Conflict", testConflict},
		{"Isolation", testIsolation},
		{"Invalid", testInvalid},
		{"ConcurrentWriters", testConcurrentWriters},
		{"Canceled", testCanceled},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.test(t, newStore) })
	}
}

// testGetMissing: a document never written is the zero document, no error.
func testGetMissing(t *testing.T, newStore func(t *testing.T) memory.Store) {
	t.Parallel()
	s := newStore(t)
	doc, err := s.Get(t.Context(), Owner1, "agent")
	if err != nil || doc != (memory.Document{}) {
		t.Fatalf("Get missing = %+v, %v; want zero document, nil", doc, err)
	}
}

// testCreateGetReplace: a document is created, read back and replaced at
// its version, each write with a new version; empty content is a document.
func testCreateGetReplace(t *testing.T, newStore func(t *testing.T) memory.Store) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	v1, err := s.Put(ctx, Owner1, "agent", "one\n", "")
	if err != nil || v1 == "" {
		t.Fatalf("create = %q, %v", v1, err)
	}
	doc, err := s.Get(ctx, Owner1, "agent")
	if err != nil || doc.Content != "one\n" || doc.Version != v1 {
		t.Fatalf("Get = %+v, %v; want one at %q", doc, err, v1)
	}
	v2, err := s.Put(ctx, Owner1, "agent", "two\n", v1)
	if err != nil || v2 == "" || v2 == v1 {
		t.Fatalf("replace = %q, %v (v1 %q)", v2, err, v1)
	}
	if doc, _ := s.Get(ctx, Owner1, "agent"); doc.Content != "two\n" || doc.Version != v2 {
		t.Fatalf("after replace: %+v", doc)
	}
	// Empty content is a document too.
	v3, err := s.Put(ctx, Owner1, "agent", "", v2)
	if err != nil || v3 == "" {
		t.Fatalf("replace with empty = %q, %v", v3, err)
	}
	if doc, _ := s.Get(ctx, Owner1, "agent"); doc.Content != "" || doc.Version != v3 {
		t.Fatalf("after empty replace: %+v", doc)
	}
}

// testConflict: a create over a document, a stale version and a replace of
// a missing document are conflicts, and change nothing.
func testConflict(t *testing.T, newStore func(t *testing.T) memory.Store) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	v1, err := s.Put(ctx, Owner1, "agent", "one", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, Owner1, "agent", "again", ""); !errors.Is(err, memory.ErrConflict) {
		t.Fatalf("create over existing: %v; want ErrConflict", err)
	}
	v2, err := s.Put(ctx, Owner1, "agent", "two", v1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, Owner1, "agent", "stale", v1); !errors.Is(err, memory.ErrConflict) {
		t.Fatalf("stale write: %v; want ErrConflict", err)
	}
	if _, err := s.Put(ctx, Owner1, "other-agent", "x", v2); !errors.Is(err, memory.ErrConflict) {
		t.Fatalf("replace missing: %v; want ErrConflict", err)
	}
	if doc, _ := s.Get(ctx, Owner1, "agent"); doc.Content != "two" || doc.Version != v2 {
		t.Fatalf("a failed write changed the document: %+v", doc)
	}
	if doc, _ := s.Get(ctx, Owner1, "other-agent"); doc.Version != "" {
		t.Fatalf("a failed write created a document: %+v", doc)
	}
}

// testIsolation: documents are kept apart by owner and by agent, whatever
// the agent's name holds (slashes, dots, any letter).
func testIsolation(t *testing.T, newStore func(t *testing.T) memory.Store) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	for _, k := range [][2]string{{Owner1, "a"}, {Owner1, "b"}, {Owner2, "a"}, {Owner1, "../a"}, {Owner1, "a/b"}, {Owner1, "Ünï cödé"}} {
		if _, err := s.Put(ctx, k[0], k[1], k[0]+"|"+k[1], ""); err != nil {
			t.Fatalf("create %v: %v", k, err)
		}
	}
	for _, k := range [][2]string{{Owner1, "a"}, {Owner1, "b"}, {Owner2, "a"}, {Owner1, "../a"}, {Owner1, "a/b"}, {Owner1, "Ünï cödé"}} {
		doc, err := s.Get(ctx, k[0], k[1])
		if err != nil || doc.Content != k[0]+"|"+k[1] {
			t.Fatalf("Get %v = %+v, %v", k, doc, err)
		}
	}
}

// testInvalid: a Get without an owner and a Put without an agent are
// invalid.
func testInvalid(t *testing.T, newStore func(t *testing.T) memory.Store) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	if _, err := s.Get(ctx, "", "a"); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("Get without owner: %v", err)
	}
	if _, err := s.Put(ctx, Owner1, "", "x", ""); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("Put without agent: %v", err)
	}
}

// testConcurrentWriters: concurrent memory.Update calls on one document
// all land, each once.
func testConcurrentWriters(t *testing.T, newStore func(t *testing.T) memory.Store) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			line := fmt.Sprintf("writer %d\n", i)
			_, wrote, err := memory.Update(ctx, s, Owner1, "shared", 1000, func(c string) (string, bool, error) {
				return c + line, true, nil
			})
			if err == nil && !wrote {
				err = errors.New("update wrote nothing")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	doc, err := s.Get(ctx, Owner1, "shared")
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if c := strings.Count(doc.Content, fmt.Sprintf("writer %d\n", i)); c != 1 {
			t.Fatalf("writer %d appears %d times in %q: a write was lost or doubled", i, c, doc.Content)
		}
	}
}

// testCanceled: a Put with a cancelled context fails.
func testCanceled(t *testing.T, newStore func(t *testing.T) memory.Store) {
	t.Parallel()
	s := newStore(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Put(ctx, Owner1, "agent", "x", ""); err == nil {
		t.Fatal("Put with a canceled context succeeded")
	}
}

// Owners used by [Run].
const (
	Owner1 = "memorytest-owner-1"
	Owner2 = "memorytest-owner-2"
)
