// Package storetesting opens the stores the threadhandoff tests run on:
// SQLite in a temporary file and PostgreSQL in a fresh schema of
// BATON_TEST_DATABASE_URL.
package storetesting

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlitestore"
)

// Backend is a store backend under test. Open returns a fresh, migrated
// store closed when the test ends, and a Target that [Reopen] accepts in
// another process.
type Backend struct {
	Name string
	Open func(t testing.TB) (store.Store, Target)
}

// Target says where a store is, so that another process can open it.
type Target struct {
	Backend string // "sqlite" or "postgres"
	Path    string // SQLite file or PostgreSQL URL
	Schema  string // PostgreSQL schema
}

// Backends returns SQLite and PostgreSQL. PostgreSQL skips the test when
// BATON_TEST_DATABASE_URL is unset, unless CI=true, where it fails.
func Backends() []Backend {
	return []Backend{{Name: "SQLite", Open: SQLite}, {Name: "PostgreSQL", Open: Postgres}}
}

// Each runs f as a parallel subtest of t on each backend.
func Each(t *testing.T, f func(t *testing.T, be Backend)) {
	t.Helper()
	for _, be := range Backends() {
		t.Run(be.Name, func(t *testing.T) {
			t.Parallel()
			f(t, be)
		})
	}
}

// SQLite opens a store in a new temporary file.
func SQLite(t testing.TB) (store.Store, Target) {
	t.Helper()
	tg := Target{Backend: "sqlite", Path: filepath.Join(t.TempDir(), "baton.db")}
	return Reopen(t, tg), tg
}

// Postgres opens a store in a fresh schema, dropped when the test ends.
// It skips the test when BATON_TEST_DATABASE_URL is unset, unless CI=true,
// where it fails.
func Postgres(t testing.TB) (store.Store, Target) {
	t.Helper()
	u := testdb.URL(t)
	tg := Target{Backend: "postgres", Path: u, Schema: testdb.Schema(t, u)}
	return Reopen(t, tg), tg
}

// Reopen opens the store at tg, closed when the test ends.
func Reopen(t testing.TB, tg Target) store.Store {
	t.Helper()
	if tg.Backend == "postgres" {
		return testdb.PostgresWith(t, tg.Path, store.Options{Schema: tg.Schema})
	}
	s, err := sqlitestore.Open(context.Background(), tg.Path, nil)
	if err != nil {
		t.Fatalf("open %s store: %v", tg.Backend, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
