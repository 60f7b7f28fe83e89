// Package storetesting opens the stores the threadhandoff tests run on:
// SQLite in a temporary file and PostgreSQL in a fresh schema of
// BATON_TEST_DATABASE_URL.
package storetesting

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
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

// SQLite opens a store in a new temporary file.
func SQLite(t testing.TB) (store.Store, Target) {
	t.Helper()
	tg := Target{Backend: "sqlite", Path: filepath.Join(t.TempDir(), "baton.db")}
	return Reopen(t, tg), tg
}

// DatabaseURL returns BATON_TEST_DATABASE_URL, skipping the test without it
// (failing it when CI=true).
func DatabaseURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("BATON_TEST_DATABASE_URL")
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("BATON_TEST_DATABASE_URL is not set and CI=true: the PostgreSQL tests must run")
		}
		t.Skip("BATON_TEST_DATABASE_URL is not set: skipping PostgreSQL " +
			"(e.g. BATON_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	return u
}

// Postgres opens a store in a fresh schema, dropped when the test ends.
func Postgres(t testing.TB) (store.Store, Target) {
	t.Helper()
	u := DatabaseURL(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	tg := Target{Backend: "postgres", Path: u, Schema: "baton_threadhandoff_test_" + hex.EncodeToString(b[:])}
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Errorf("drop schema %s: %v", tg.Schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+tg.Schema+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", tg.Schema, err)
		}
	})
	return Reopen(t, tg), tg
}

// Reopen opens the store at tg, closed when the test ends.
func Reopen(t testing.TB, tg Target) store.Store {
	t.Helper()
	ctx := context.Background()
	var s store.Store
	var err error
	if tg.Backend == "postgres" {
		s, err = pgstore.Open(ctx, tg.Path, &store.Options{Schema: tg.Schema})
	} else {
		s, err = sqlitestore.Open(ctx, tg.Path, nil)
	}
	if err != nil {
		t.Fatalf("open %s store: %v", tg.Backend, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
